package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// agyGateway is meridian serving --backend antigravity over the agy
// stand-in playing scenario.
type agyGateway struct {
	*gatewayProc
	agy   string // the stand-in's path
	home  string // its HOME, where it keeps conversations
	calls func() []map[string]any
}

func newAgyGateway(t *testing.T, scenario map[string]any) *agyGateway {
	t.Helper()
	path, env, calls := testkit.FakeAgy(t, scenario)
	g := &agyGateway{gatewayProc: &gatewayProc{t: t, bin: buildBinary(t), env: env, dataDir: t.TempDir()}, agy: path, calls: calls}
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			g.home = h
		}
	}
	t.Cleanup(func() {
		if g.cmd != nil && g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
		for _, pid := range g.agys() {
			testkit.Kill(pid)
		}
	})
	return g
}

func (g *agyGateway) start() { g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy) }

// stop ends meridian with SIGTERM and waits for it.
func (g *agyGateway) stop() {
	g.t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		g.t.Fatal(err)
	}
	if err := g.cmd.Wait(); err != nil {
		g.t.Fatalf("meridian exited: %v", err)
	}
}

// agys lists the stand-in's processes, from the process table.
func (g *agyGateway) agys() []int {
	var out []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); strings.HasPrefix(string(cmd), g.agy+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// sessions lists the stand-in's session starts: their argv.
func (g *agyGateway) sessions() [][]string {
	var out [][]string
	for _, c := range g.calls() {
		argv, _ := c["argv"].([]any)
		var args []string
		for _, a := range argv {
			args = append(args, a.(string))
		}
		if slices.Contains(args, "--input-format") {
			out = append(out, args)
		}
	}
	return out
}

// stdin lists the lines the stand-in read.
func (g *agyGateway) stdin() []string {
	var out []string
	for _, c := range g.calls() {
		if s, ok := c["stdin"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (g *agyGateway) client(conversation string) *sdk.Client {
	c := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("client-key"), option.WithMaxRetries(0),
		option.WithHeader("X-Claude-Code-Session-Id", conversation))
	return &c
}

func agyParams(turns ...string) sdk.MessageNewParams {
	var msgs []sdk.MessageParam
	for i, t := range turns {
		if i%2 == 0 {
			msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock(t)))
		} else {
			msgs = append(msgs, sdk.NewAssistantMessage(sdk.NewTextBlock(t)))
		}
	}
	return sdk.MessageNewParams{Model: "gemini-3.8-flash-low", MaxTokens: 1024, Messages: msgs}
}

func agyAnswer(text string, in, out int) map[string]any {
	return map[string]any{"type": "agent_response", "text": text,
		"usage": map[string]int{"input_tokens": in, "output_tokens": out, "total_tokens": in + out}}
}

// Through the official SDK and meridian --backend antigravity, agy (the
// stand-in) answers with exact text and usage, streamed and not; a
// conversation's second turn runs on its live agy; after a restart it
// continues by --conversation with only the new message; when agy no
// longer knows the conversation, or the client goes back in it, the
// history is replayed into a new one. Shutdown leaves no agy process.
func TestAntigravityBackend(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		// The stand-in sees a replay's whole history: later questions match first.
		{"match": "stream", "steps": []any{agyAnswer("A streamed answer in several fragments.\n", 90, 8)}},
		{"match": "second", "steps": []any{agyAnswer("Second answer.\n", 150, 3)}},
		{"match": "first", "steps": []any{agyAnswer("Hello from agy, the first answer.\n", 120, 7)}},
	}})
	g.start()
	ctx := context.Background()

	var resp *http.Response
	msg, err := g.client("agy-1").Messages.New(ctx, agyParams("first question"), option.WithResponseInto(&resp))
	id := resp.Header.Get("X-Meridian-Session-Id")
	if err != nil || id == "" || msg.Content[0].Text != "Hello from agy, the first answer.\n" || msg.Usage.InputTokens != 120 || msg.Usage.OutputTokens != 7 {
		t.Fatalf("first turn: %v %+v", err, msg)
	}
	msg, err = g.client("agy-1").Messages.New(ctx, agyParams("first question", "Hello from agy, the first answer.\n", "second question"))
	if err != nil || msg.Content[0].Text != "Second answer.\n" || msg.Usage.InputTokens != 150 || msg.Usage.OutputTokens != 3 {
		t.Fatalf("second turn: %v %s\nagy read %q\n%s", err, msg.RawJSON(), g.stdin(), g.log.String())
	}
	if n := len(g.sessions()); n != 1 {
		t.Fatalf("%d agy sessions for one conversation's two turns", n)
	}
	if in := g.stdin(); len(in) != 2 || !strings.Contains(in[1], "second question") || strings.Contains(in[1], "first question") {
		t.Fatalf("agy read %q, want each new question alone", in)
	}

	stream := g.client("agy-2").Messages.NewStreaming(ctx, agyParams("stream please"))
	var acc sdk.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || acc.Content[0].Text != "A streamed answer in several fragments.\n" || acc.Usage.OutputTokens != 8 {
		t.Fatalf("streamed: %v %+v", err, acc)
	}

	// A restart: the conversation continues by its id, with only the new
	// message.
	g.stop()
	if left := g.agys(); len(left) != 0 {
		t.Fatalf("agy processes left after shutdown: %v", left)
	}
	g.start()
	msg, err = g.client("agy-1").Messages.New(ctx, agyParams("first question", "Hello from agy, the first answer.\n", "second question", "Second answer.\n", "third"))
	if err != nil || msg.Content[0].Text != "ok\n" {
		t.Fatalf("after a restart: %v %+v", err, msg)
	}
	sessions, in := g.sessions(), g.stdin()
	if last := sessions[len(sessions)-1]; !slices.Contains(last, "--conversation") || last[slices.Index(last, "--conversation")+1] != id {
		t.Fatalf("the restarted conversation ran as %q, want --conversation %s", last, id)
	}
	if last := in[len(in)-1]; !strings.Contains(last, "third") || strings.Contains(last, "first question") {
		t.Fatalf("agy read %q after the restart", last)
	}

	// agy forgot the conversation: a full replay in a new one.
	g.stop()
	if err := os.Remove(filepath.Join(g.home, ".gemini", "antigravity-cli", "conversations", id+".json")); err != nil {
		t.Fatal(err)
	}
	g.start()
	msg, err = g.client("agy-1").Messages.New(ctx, agyParams("first question", "Hello from agy, the first answer.\n", "second question", "Second answer.\n", "third", "ok\n", "fourth"))
	if err != nil || msg.Content[0].Text != "Second answer.\n" {
		t.Fatalf("after agy forgot: %v %+v", err, msg)
	}
	sessions, in = g.sessions(), g.stdin()
	if last := sessions[len(sessions)-1]; slices.Contains(last, "--conversation") {
		t.Fatalf("the replay ran as %q, want a new conversation", last)
	}
	if last := in[len(in)-1]; !strings.Contains(last, "first question") || !strings.Contains(last, "Second answer.") || !strings.Contains(last, "fourth") {
		t.Fatalf("the replay gave agy %q, want the whole history", last)
	}
	// Going back (the client edited its second question): agy cannot cut
	// a conversation short, so a new one gets the history up to there.
	before := len(g.sessions())
	msg, err = g.client("agy-1").Messages.New(ctx, agyParams("first question", "Hello from agy, the first answer.\n", "second, asked again"))
	if err != nil || msg.Content[0].Text != "Second answer.\n" {
		t.Fatalf("an undo: %v %+v", err, msg)
	}
	sessions, in = g.sessions(), g.stdin()
	if len(sessions) != before+1 || slices.Contains(sessions[len(sessions)-1], "--conversation") {
		t.Fatalf("the undo ran as %q", sessions[len(sessions)-1])
	}
	if last := in[len(in)-1]; !strings.Contains(last, "first question") || strings.Contains(last, "fourth") {
		t.Fatalf("the undo gave agy %q", last)
	}
	g.stop()
	if left := g.agys(); len(left) != 0 {
		t.Fatalf("agy processes left after shutdown: %v", left)
	}
}
