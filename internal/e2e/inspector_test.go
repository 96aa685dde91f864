package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// storeHas reports whether any file of the gateway's database (the file,
// its WAL, its shared memory) holds text.
func (g *gatewayProc) storeHas(t *testing.T, text string) bool {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(g.dataDir, "*.db*"))
	if len(files) == 0 {
		t.Fatalf("no database in %s", g.dataDir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			return true
		}
	}
	return false
}

// Capture off (the server's default) keeps no prompt in the store; a
// key set to content is captured whole, its secrets redacted before they
// are kept, and the inspector's page shows its request and answer.
func TestRequestInspector(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		return testkit.Reply{Text: "the answer is forty-two", Usage: testkit.Usage{InputTokens: 12, OutputTokens: 5}}
	})
	watched := g.addKey(t, "", "watched", "--capture", "content")
	quiet := g.addKey(t, "", "quiet")
	g.env = append(g.env, "MERIDIAN_ADMIN_KEY="+adminKey)
	g.start()

	// Off: a request with the quiet key leaves no trace of its prompt.
	if resp, body, err := g.post(prompt("PROMPT-UNCAPTURED-7f3a"), "X-Api-Key", quiet); err != nil || resp.StatusCode != 200 {
		t.Fatalf("quiet: %v %s", err, body)
	}
	// Content: the prompt carries an Anthropic key and a bearer token.
	const token = "sk-ant-api03-CAPTURED9SECRETxyzABCDEFGH"
	const bearer = "Bearer tok_CAPTURED9BEARERabcdefghijkl"
	secretPrompt := fmt.Sprintf("PROMPT-CAPTURED-51c2 use %s and send %s", token, bearer)
	if resp, body, err := g.post(prompt(secretPrompt), "X-Api-Key", watched); err != nil || resp.StatusCode != 200 {
		t.Fatalf("watched: %v %s", err, body)
	}
	var list struct {
		Capture  string `json:"capture"`
		Requests []struct {
			ID     int64 `json:"id"`
			Record struct {
				Key string `json:"key"`
			} `json:"record"`
		} `json:"requests"`
	}
	waitTrue(t, 10*time.Second, "the capture written", func() bool {
		req, _ := http.NewRequest(http.MethodGet, g.url+"/inspector/requests", nil)
		req.Header.Set("X-Api-Key", adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&list) == nil && len(list.Requests) > 0
	})
	if list.Capture != "off" || len(list.Requests) != 1 || list.Requests[0].Record.Key != "watched" {
		t.Fatalf("captured: %+v, want only the watched key's request", list)
	}
	if g.storeHas(t, "PROMPT-UNCAPTURED-7f3a") {
		t.Fatal("with capture off, the store holds the prompt")
	}
	if !g.storeHas(t, "PROMPT-CAPTURED-51c2") {
		t.Fatal("with capture content, the store lacks the prompt")
	}
	for _, secret := range []string{"CAPTURED9SECRET", "CAPTURED9BEARER", watched, adminKey} {
		if g.storeHas(t, secret) {
			t.Fatalf("the store holds a secret: %s", secret)
		}
	}
	// The page, as the operator sees it.
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(g.url+"/inspector"))
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, adminKey), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`#captures`))
	b.forget()
	b.do(t, chromedp.Click(`#captures tr.capture a`))
	b.waitLocation(t, fmt.Sprintf("/inspector/%d", list.Requests[0].ID))
	sent, answer, headers := text(t, b, "#sent pre"), text(t, b, "#answer pre"), text(t, b, "#headers pre")
	if !strings.Contains(sent, "PROMPT-CAPTURED-51c2 use [REDACTED] and send Bearer [REDACTED]") ||
		!strings.Contains(answer, "the answer is forty-two") || !strings.Contains(strings.ToLower(headers), "x-api-key: [redacted]") {
		t.Fatalf("the page shows\nsent: %s\nanswer: %s\nheaders: %s", sent, answer, headers)
	}
	if written := text(t, b, "#written pre"); !strings.Contains(written, "PROMPT-CAPTURED-51c2") {
		t.Fatalf("what the CLI was written: %s", written)
	}
	b.screenshot(t, "inspector-request")
	b.do(t, chromedp.Navigate(g.url+"/inspector"), chromedp.WaitVisible(`#captures`))
	b.screenshot(t, "inspector")
	b.clean(t)
	// The export, from the store directly.
	cmd := exec.Command(g.bin, "requests", "export", "--since", "1h", "--data-dir", g.dataDir)
	cmd.Env = g.env
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil || strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "PROMPT-CAPTURED-51c2") ||
		strings.Contains(out.String(), "CAPTURED9SECRET") {
		t.Fatalf("export: %v\n%s", err, out.String())
	}
}
