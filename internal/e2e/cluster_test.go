package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// newHost is one meridian of several sharing a PostgreSQL store and one
// fake upstream: its own loopback address, data dir and CLI config dir.
func newHost(t testing.TB, up *testkit.Upstream) *gatewayProc {
	t.Helper()
	env, marker := testkit.ClaudeEnv(t, up.URL)
	g := &gatewayProc{t: t, bin: buildBinary(t), env: env, dataDir: t.TempDir(), up: up, marker: marker}
	t.Cleanup(func() {
		if g.cmd != nil && g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
		testkit.WaitNoProcesses(t, marker, 5*time.Second)
		noSecretLogged(t, g.log.String())
	})
	return g
}

// startOn runs the host on ip, on the store dsn names.
func (g *gatewayProc) startOn(ip, dsn string, args ...string) {
	g.t.Helper()
	g.start(append([]string{"--host", ip, "--store", dsn, "--host-expiry", "3s", "--spares", "0"}, args...)...)
}

func (g *gatewayProc) anthropic(conversation string) *sdk.Client {
	c := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("client-key"), option.WithMaxRetries(0),
		option.WithHeader("X-Claude-Code-Session-Id", conversation))
	return &c
}

func (g *gatewayProc) openai() *openai.Client {
	c := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	return &c
}

func (g *gatewayProc) getJSON(path string, into any) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.url+path, nil)
	req.Header.Set("X-Api-Key", "client-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		g.t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func messageText(m *sdk.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// Two meridians with their own host ids and data dirs on one PostgreSQL
// database are one gateway for what the store holds: a conversation goes
// on from one to the other with its whole history; a retry reaching the
// other host gets the first host's saved answer; a response stored on
// one continues on the other; a background response on one is followed
// and cancelled through the other; one host's telemetry counts the
// other's requests; and a request whose host died mid-run is refused
// with an unknown outcome on the other once the dead host's heartbeat
// has expired.
func TestTwoHostsShareOneStore(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up := testkit.NewUpstream(t)
	var calls atomic.Int32
	up.Respond(func(r testkit.Request) testkit.Reply {
		calls.Add(1)
		// A replayed conversation arrives as one message: the newest
		// question decides.
		last := r.LastUserText()
		switch {
		case strings.Contains(last, "which word was it?"):
			return testkit.Reply{Text: "answer to which word was it?"}
		case strings.Contains(last, "and what did you note?"):
			return testkit.Reply{Text: "answer to and what did you note?"}
		case strings.Contains(last, "long story"):
			// message_start, content_block_start and the four deltas, then
			// nothing until the turn is cancelled.
			return testkit.Reply{Chunks: []string{"once ", "upon ", "a ", "time"}, StallAfter: 6}
		case strings.Contains(last, "charge the card"):
			return testkit.Reply{Hang: true}
		case strings.Contains(last, "remember"):
			return testkit.Reply{Text: "noted: ZEBRA"}
		}
		return testkit.Reply{Text: "answer to " + last}
	})
	a, b := newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn, "--max-live", "0")
	// b names a password in its flag (the server trusts loopback and
	// ignores it): it is warned about and shown nowhere.
	const secret = "hunter2-secret"
	b.startOn("127.0.0.3", strings.Replace(dsn, "meridian@", "meridian:"+secret+"@", 1))
	ctx := context.Background()

	var healthA, healthB struct {
		Host  string
		Store struct {
			Engine    string
			LiveHosts int `json:"live_hosts"`
		}
	}
	a.getJSON("/health", &healthA)
	b.getJSON("/health", &healthB)
	if healthA.Host == "" || healthA.Host == healthB.Host || healthA.Store.Engine != "postgres" || healthB.Store.LiveHosts != 2 {
		t.Fatalf("health: a %+v, b %+v", healthA, healthB)
	}
	u, _ := url.Parse(b.url)
	status, err := exec.Command(b.bin, "status", "--host", u.Hostname(), "--port", u.Port(), "--admin-key", "client-key").CombinedOutput()
	if err != nil || !strings.Contains(string(status), "host       "+healthB.Host+", store postgres (2 live hosts)") {
		t.Fatalf("meridian status: %v\n%s", err, status)
	}
	var inflight map[string]any
	b.getJSON("/inflight", &inflight)
	shown, _ := json.Marshal(inflight)
	if !strings.Contains(b.log.String(), "--store carries a password") {
		t.Fatalf("no warning of the password in --store:\n%s", b.log.String())
	}
	for what, text := range map[string]string{"the log": b.log.String(), "/inflight": string(shown), "status": string(status)} {
		if strings.Contains(text, secret) {
			t.Fatalf("%s shows the store's password: %s", what, text)
		}
	}

	t.Run("a conversation moves to the other host", func(t *testing.T) {
		first := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100,
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("remember the word"))}}
		c := a.anthropic("moving")
		m1, err := c.Messages.New(ctx, first)
		if err != nil || messageText(m1) != "noted: ZEBRA" {
			t.Fatalf("turn 1 on a: %v %v", err, m1)
		}
		second := first
		second.Messages = append(second.Messages, m1.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("which word was it?")))
		cb := b.anthropic("moving")
		m2, err := cb.Messages.New(ctx, second)
		if err != nil || messageText(m2) != "answer to which word was it?" {
			t.Fatalf("turn 2 on b: %v %v", err, m2)
		}
		// B's CLI got the whole history, a's question and answer
		// included: from a's transcript, shared through the store, or
		// replayed if it was not there yet.
		reqs := up.Requests()
		all := reqs[len(reqs)-1].AllText()
		for _, want := range []string{"remember the word", "noted: ZEBRA", "which word was it?"} {
			if !strings.Contains(all, want) {
				t.Fatalf("b's upstream request lacks %q: %s", want, all)
			}
		}
		var info map[string]any
		b.getJSON("/v1/sessions/moving", &info)
		if info["version"] != float64(2) {
			t.Fatalf("the conversation on b: %v", info)
		}
	})

	t.Run("a retry on the other host gets the saved answer", func(t *testing.T) {
		body := `{"model":"test-model","max_tokens":100,"messages":[
			{"role":"user","content":"list the files"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_shared1","name":"ls","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_shared1","content":"a.go b.go"}]}],
			"tools":[{"name":"ls","description":"list files","input_schema":{"type":"object"}}]}`
		resp, first, err := a.post(body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("on a: %v %s", err, first)
		}
		before := calls.Load()
		resp, again, err := b.post(body)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Replayed") != "true" || again != first {
			t.Fatalf("the retry on b: %v %d replayed=%q\n%s\nwant\n%s", err, resp.StatusCode, resp.Header.Get("X-Meridian-Replayed"), again, first)
		}
		if n := calls.Load() - before; n != 0 {
			t.Fatalf("the retry on b reached the upstream %d times", n)
		}
	})

	t.Run("a stored response continues on the other host", func(t *testing.T) {
		r1, err := a.openai().Responses.New(ctx, responses.ResponseNewParams{Model: "test-model",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("remember this too")}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.openai().Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
		if err != nil || got.OutputText() != "noted: ZEBRA" {
			t.Fatalf("a's response read on b: %v %v", err, got)
		}
		r2, err := b.openai().Responses.New(ctx, responses.ResponseNewParams{Model: "test-model", PreviousResponseID: openai.String(r1.ID),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("and what did you note?")}})
		if err != nil || r2.OutputText() != "answer to and what did you note?" {
			t.Fatalf("continued on b: %v %v", err, r2)
		}
		reqs := up.Requests()
		if all := reqs[len(reqs)-1].AllText(); !strings.Contains(all, "remember this too") || !strings.Contains(all, "noted: ZEBRA") {
			t.Fatalf("b's turn lacks a's history: %s", all)
		}
		if err := b.openai().Responses.Delete(ctx, r1.ID); err != nil {
			t.Fatalf("a's response deleted on b: %v", err)
		}
		if _, err := a.openai().Responses.Get(ctx, r1.ID, responses.ResponseGetParams{}); err == nil {
			t.Fatal("a response deleted on b is still on a")
		}
	})

	t.Run("a background response is followed and cancelled through the other host", func(t *testing.T) {
		started, err := a.openai().Responses.New(ctx, responses.ResponseNewParams{Model: "test-model", Background: openai.Bool(true),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("tell a long story")}})
		if err != nil {
			t.Fatal(err)
		}
		// Followed through b: the events a's run writes arrive live.
		followCtx, stopFollowing := context.WithCancel(ctx)
		defer stopFollowing()
		stream := b.openai().Responses.GetStreaming(followCtx, started.ID, responses.ResponseGetParams{})
		var seen []string
		for stream.Next() {
			ev := stream.Current()
			seen = append(seen, ev.Type)
			if ev.Type == "response.output_text.delta" && strings.Contains(ev.Delta, "time") {
				break
			}
		}
		if !strings.Contains(strings.Join(seen, " "), "response.output_text.delta") {
			t.Fatalf("followed through b: %v (%v)", seen, stream.Err())
		}
		if err := testkit.WaitFor(5*time.Second, func() error {
			if n := len(a.claudes()); n != 1 {
				return fmt.Errorf("a runs %d claude processes, want the response's one", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		cancelled, err := b.openai().Responses.Cancel(ctx, started.ID)
		asked := time.Now()
		if err != nil || cancelled.Status != "cancelled" {
			t.Fatalf("cancel through b: %v %v", err, cancelled)
		}
		if err := testkit.WaitFor(3*time.Second, func() error {
			if pids := a.claudes(); len(pids) > 0 {
				return fmt.Errorf("a's claude %v still runs", pids)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("a's claude gone %v after the cancel reached b", time.Since(asked).Round(time.Millisecond))
		// b's stream ends with the cancel: the open items are closed, and
		// a cancelled response has no terminal event of its own.
		for stream.Next() {
			seen = append(seen, stream.Current().Type)
		}
		if err := stream.Err(); err != nil || seen[len(seen)-1] != "response.output_item.done" {
			t.Fatalf("b's stream ended with %v after %v", err, seen)
		}
		got, err := b.openai().Responses.Get(ctx, started.ID, responses.ResponseGetParams{})
		if err != nil || got.Status != "cancelled" || !strings.Contains(got.OutputText(), "once upon a time") {
			t.Fatalf("the cancelled response through b: %v %+v", err, got)
		}
	})

	t.Run("telemetry on one host counts the other's requests", func(t *testing.T) {
		var sum struct {
			Cumulative struct{ Totals struct{ Requests int } }
			ByHost     []struct {
				Name     string `json:"name"`
				Requests int    `json:"requests"`
			} `json:"by_host"`
		}
		if err := testkit.WaitFor(10*time.Second, func() error {
			b.getJSON("/telemetry/summary", &sum)
			for _, h := range sum.ByHost {
				if h.Name == healthA.Host && h.Requests >= 4 {
					return nil
				}
			}
			return fmt.Errorf("by host: %+v", sum.ByHost)
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a request whose host died has an unknown outcome on the other", func(t *testing.T) {
		body := prompt("charge the card")
		go func() { _, _, _ = a.post(body, "Idempotency-Key", "order-77") }()
		waitUpstreamHas(t, up, "charge the card")
		a.kill9()
		killed := time.Now()
		var last string
		if err := testkit.WaitFor(15*time.Second, func() error {
			resp, got, err := b.post(body, "Idempotency-Key", "order-77")
			if err != nil {
				return err
			}
			last = got
			if resp.StatusCode == http.StatusConflict && strings.Contains(got, "outcome is unknown") {
				return nil
			}
			if resp.StatusCode != http.StatusConflict || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("before a's heartbeat expired: %d %s", resp.StatusCode, got)
			}
			return fmt.Errorf("%d %s", resp.StatusCode, got)
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("b answered \"outcome unknown\" %v after a was killed: %s", time.Since(killed).Round(time.Millisecond), last)
		if n := upstreamHad(up, "charge the card"); n != 1 {
			t.Fatalf("the upstream saw the request %d times", n)
		}
	})
}
