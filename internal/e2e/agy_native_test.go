package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// agy's browser and subagents are denied unless the operator grants them
// (--agy-allow), and the answer says what native work ran or was denied
// (X-Meridian-Native-Work, a trailer on a stream). Granted, the browser
// keeps its profile under Meridian's data dir, never the user's
// ~/.config; a subagent may work inside the session's workspace and
// nowhere else.
func TestAntigravityNativeToolsAreOptIn(t *testing.T) {
	t.Parallel()
	subagent := func(workspace string) map[string]any {
		return map[string]any{"type": "tool", "tool": "invoke_subagent", "params": map[string]any{
			"Subagents": []any{map[string]any{"Prompt": "tidy up", "Role": "helper", "TypeName": "general", "Workspace": workspace}}}}
	}
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "browse", "steps": []any{map[string]any{"type": "tool", "tool": "open_browser_url", "params": map[string]any{"Url": "https://example.test/"}},
			agyAnswer("browser: {{tool_output}}\n", 10, 2)}},
		{"match": "delegate", "steps": []any{subagent("{{cwd}}/part"), agyAnswer("sub: {{tool_output}}\n", 10, 2)}},
		{"match": "escape", "steps": []any{subagent("/etc"), agyAnswer("escaped\n", 10, 2)}},
	}})
	userProfile := filepath.Join(g.home, ".config", "google-chrome")
	ask := func(conversation, prompt string) (*sdk.Message, string) {
		t.Helper()
		var resp *http.Response
		msg, err := g.client(conversation).Messages.New(context.Background(), agyParams(prompt), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v\n%s", prompt, err, g.log.String())
		}
		return msg, resp.Header.Get("X-Meridian-Native-Work")
	}
	profiles := func() []string {
		var out []string
		for _, c := range g.calls() {
			if p, ok := c["browser_profile"].(string); ok {
				out = append(out, p)
			}
		}
		return out
	}

	g.start()
	if msg, native := ask("off-1", "browse the page"); native != "open_browser_url: denied" || strings.Contains(msg.Content[0].Text, "opened") {
		t.Fatalf("the browser without a grant: %q, answered %q", native, msg.Content[0].Text)
	}
	if _, native := ask("off-2", "delegate the work"); native != "invoke_subagent: denied" {
		t.Fatalf("a subagent without a grant: %q", native)
	}
	if p := profiles(); len(p) > 0 {
		t.Fatalf("the browser ran without a grant: %v", p)
	}
	g.stop()

	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--agy-allow", "browser,subagents")
	msg, native := ask("on-1", "browse the page")
	if native != "open_browser_url: ran" || msg.Content[0].Text != "browser: opened https://example.test/ in the browser\n" {
		t.Fatalf("the granted browser: %q, answered %q", native, msg.Content[0].Text)
	}
	want := filepath.Join(g.dataDir, "agy-browser", "config", "google-chrome")
	if p := profiles(); len(p) != 1 || p[0] != want {
		t.Fatalf("the browser's profile went to %v, want %s", p, want)
	}
	if _, err := os.Stat(userProfile); err == nil {
		t.Fatal("the browser touched the user's ~/.config")
	}
	if msg, native := ask("on-2", "delegate the work"); native != "invoke_subagent: ran" || !strings.Contains(msg.Content[0].Text, `a subagent did "tidy up" in `+filepath.Join(g.dataDir, "workspace")) {
		t.Fatalf("a subagent in the workspace: %q, answered %q", native, msg.Content[0].Text)
	}
	if _, native := ask("on-3", "escape the workspace"); native != "invoke_subagent: denied" {
		t.Fatalf("a subagent outside the workspace: %q", native)
	}
	// A stream carries the report as a trailer.
	resp, _, err := g.post(`{"model":"gemini-3.8-flash-low","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"browse again"}]}`,
		"X-Claude-Code-Session-Id", "on-4")
	if err != nil || resp.Trailer.Get("X-Meridian-Native-Work") != "open_browser_url: ran" {
		t.Fatalf("the stream's trailer: %v %v", err, resp.Trailer)
	}
}
