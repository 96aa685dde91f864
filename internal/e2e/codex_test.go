package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// codexGateway is meridian serving --backend codex on the pinned codex,
// whose only provider is a fake Responses upstream.
type codexGateway struct {
	*gatewayProc
	up *testkit.ResponsesUpstream
}

func newCodexGateway(t *testing.T) *codexGateway {
	t.Helper()
	g := unstartedCodexGateway(t)
	g.start("--backend", "codex", "--codex-path", testkit.CodexPath(t), "--spares", "0")
	return g
}

// unstartedCodexGateway is a codexGateway not started yet.
func unstartedCodexGateway(t testing.TB) *codexGateway {
	t.Helper()
	up := testkit.NewResponsesUpstream(t, "unused")
	home := testkit.CodexHome(t, up.URL, "gpt-test")
	env := []string{"HOME=" + t.TempDir(), "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	g := &codexGateway{gatewayProc: &gatewayProc{t: t, bin: buildBinary(t), env: env, dataDir: t.TempDir()}, up: up}
	t.Cleanup(func() {
		if g.cmd != nil && g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
		for _, pid := range g.codexes() {
			testkit.Kill(pid)
		}
	})
	return g
}

// codexes lists the codex processes of this meridian's conversations
// (and spares): those working in its data dir's session folders, not
// the short-lived ones that answer a question such as the model list.
func (g *codexGateway) codexes() []int {
	var out []int
	root := filepath.Join(g.dataDir, "codex-sessions", "session-")
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		argv, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if !strings.Contains(string(argv), "\x00app-server\x00") {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", d.Name(), "cwd")); err == nil && strings.HasPrefix(cwd, root) {
			out = append(out, pid)
		}
	}
	return out
}

// numbered answers request n with "answer n".
func numbered(n int, _ map[string]any) testkit.ResponsesReply {
	return testkit.ResponsesReply{Text: []string{"answer", fmt.Sprintf(" %d", n)}}
}

// once checks that each user message reached the model exactly once in
// the last upstream request: the thread was given only each new message.
func (g *codexGateway) once(t *testing.T, questions []string) {
	t.Helper()
	reqs := g.up.Requests()
	last, _ := json.Marshal(reqs[len(reqs)-1]["input"])
	for _, q := range questions {
		if n := strings.Count(string(last), q); n != 1 {
			t.Errorf("%q is in the last upstream request %d times: %s", q, n, last)
		}
	}
}

// Five turns of one conversation on the Messages API: turns 2-5 run on
// the codex process that answered turn 1, given only the new message.
func TestCodexMessagesConversation(t *testing.T) {
	g := newCodexGateway(t)
	g.up.Script = numbered
	client := g.anthropic("codex-five")
	var msgs []sdk.MessageParam
	var questions []string
	pid := 0
	for i := 1; i <= 5; i++ {
		q := fmt.Sprintf("question number %d", i)
		questions = append(questions, q)
		msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock(q)))
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256,
			System: []sdk.TextBlockParam{{Text: "Be brief."}}, Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if got := msg.Content[0].Text; got != fmt.Sprintf("answer %d", i) {
			t.Fatalf("turn %d: %q", i, got)
		}
		msgs = append(msgs, msg.ToParam())
		procs := g.codexes()
		if len(procs) != 1 {
			t.Fatalf("turn %d: %d codex processes", i, len(procs))
		}
		if i > 1 && procs[0] != pid {
			t.Fatalf("turn %d ran on codex %d, not %d", i, procs[0], pid)
		}
		pid = procs[0]
	}
	g.once(t, questions)
}

// The same on Chat Completions, with the official OpenAI SDK.
func TestCodexChatConversation(t *testing.T) {
	g := newCodexGateway(t)
	g.up.Script = numbered
	client := g.openai()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief.")}
	var questions []string
	pid := 0
	for i := 1; i <= 5; i++ {
		q := fmt.Sprintf("chat question %d", i)
		questions = append(questions, q)
		msgs = append(msgs, openai.UserMessage(q))
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if got := resp.Choices[0].Message.Content; got != fmt.Sprintf("answer %d", i) {
			t.Fatalf("turn %d: %q", i, got)
		}
		msgs = append(msgs, resp.Choices[0].Message.ToParam())
		procs := g.codexes()
		if len(procs) != 1 || (i > 1 && procs[0] != pid) {
			t.Fatalf("turn %d: codex processes %v, first %d", i, procs, pid)
		}
		pid = procs[0]
	}
	g.once(t, questions)
}

// A client tool through codex: the model's call reaches the client as a
// tool_use; its result continues the paused thread.
func TestCodexClientTool(t *testing.T) {
	g := newCodexGateway(t)
	g.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		if n == 1 {
			return testkit.ResponsesReply{Text: []string{"Checking."},
				Calls: []testkit.ResponsesCall{{Name: "read_file", Namespace: "mcp__meridian", Arguments: `{"path":"notes.txt"}`}}}
		}
		return testkit.ResponsesReply{Text: []string{"The notes say hello."}}
	}
	client := g.anthropic("codex-tools")
	tools := []sdk.ToolUnionParam{{OfTool: &sdk.ToolParam{Name: "read_file", Description: sdk.String("reads a file"),
		InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}}}}}
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("what do my notes say?"))}
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256, Tools: tools, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != sdk.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[1].Name != "read_file" ||
		string(msg.Content[1].Input) != `{"path":"notes.txt"}` {
		t.Fatalf("first answer: %s %+v", msg.StopReason, msg.Content)
	}
	msgs = append(msgs, msg.ToParam(), sdk.NewUserMessage(sdk.NewToolResultBlock(msg.Content[1].ID, "hello", false)))
	msg, err = client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256, Tools: tools, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "The notes say hello." {
		t.Fatalf("after the result: %+v", msg.Content)
	}
	reqs := g.up.Requests()
	second, _ := json.Marshal(reqs[1]["input"])
	if len(reqs) != 2 || !strings.Contains(string(second), "function_call_output") || !strings.Contains(string(second), "hello") {
		t.Fatalf("the thread was not continued with the result: %d requests: %s", len(reqs), second)
	}
}

// A client that disconnects mid-stream interrupts the codex turn: the
// upstream sees its stream cancelled; the conversation goes on.
func TestCodexDisconnectInterrupts(t *testing.T) {
	g := newCodexGateway(t)
	hold := make(chan struct{})
	defer close(hold)
	g.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		if n == 1 {
			return testkit.ResponsesReply{Text: []string{"start", " never sent"}, Hold: hold}
		}
		return testkit.ResponsesReply{Text: []string{"after"}}
	}
	client := g.anthropic("codex-cut")
	ctx, cancel := context.WithCancel(context.Background())
	stream := client.Messages.NewStreaming(ctx, sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("a long one"))}})
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			cancel()
			break
		}
	}
	_ = stream.Close()
	cancel()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if g.up.Cancelled() == 0 {
			return errors.New("the upstream stream was not cancelled")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("something else"))}})
	if err != nil || msg.Content[0].Text != "after" {
		t.Fatalf("next request: %v %+v", err, msg)
	}
}

// kill -9 of codex mid-turn: the client gets a clean error in its shape;
// the next turn resumes the thread with its history.
func TestCodexKilledMidTurn(t *testing.T) {
	g := newCodexGateway(t)
	hold := make(chan struct{})
	defer close(hold)
	g.up.Script = func(n int, _ map[string]any) testkit.ResponsesReply {
		switch n {
		case 1:
			return testkit.ResponsesReply{Text: []string{"first answer"}}
		case 2:
			return testkit.ResponsesReply{Text: []string{"cut", " off"}, Hold: hold}
		}
		return testkit.ResponsesReply{Text: []string{"resumed answer"}}
	}
	client := g.anthropic("codex-kill")
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("first question"))}
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("second question")))
	done := make(chan error, 1)
	go func() {
		_, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256, Messages: msgs})
		done <- err
	}()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if len(g.up.Requests()) < 2 {
			return errors.New("the second turn has not reached the upstream")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range g.codexes() {
		testkit.Kill(pid)
	}
	var apiErr *sdk.Error
	select {
	case err := <-done:
		if !errors.As(err, &apiErr) || apiErr.StatusCode < 500 {
			t.Fatalf("the killed turn: %v", err)
		}
		if strings.Contains(apiErr.Error(), g.dataDir) {
			t.Fatalf("the error shows a local path: %v", apiErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the killed turn did not end")
	}
	msgs = msgs[:len(msgs)-1]
	msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock("third question")))
	msg, err = client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 256, Messages: msgs})
	if err != nil || msg.Content[0].Text != "resumed answer" {
		t.Fatalf("after the kill: %v %+v", err, msg)
	}
	reqs := g.up.Requests()
	last, _ := json.Marshal(reqs[len(reqs)-1]["input"])
	for _, want := range []string{"first question", "first answer", "third question"} {
		if !strings.Contains(string(last), want) {
			t.Errorf("the resumed thread lacks %q: %s", want, last)
		}
	}
}

// A codex-api profile: its key goes to codex's own login in the
// profile's CODEX_HOME (Meridian keeps no copy, shows it nowhere); a
// request naming the profile runs codex in that home, the others in the
// environment's; a claude profile is not served by --backend codex.
func TestCodexProfiles(t *testing.T) {
	g := unstartedCodexGateway(t)
	g.up.Script = func(int, map[string]any) testkit.ResponsesReply {
		return testkit.ResponsesReply{Text: []string{"from the default home"}}
	}
	other := testkit.NewResponsesUpstream(t, "from the profile's home")
	profileCmd := func(stdin string, args ...string) string {
		cmd := exec.Command(g.bin, append(append([]string{"profile"}, args...), "--data-dir", g.dataDir, "--codex-path", testkit.CodexPath(t))...)
		cmd.Env, cmd.Stdin = g.env, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("profile %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	const key = "sk-test-SECRET-0123456789"
	out := profileCmd(key+"\n", "add", "oai", "--kind", "codex-api")
	if strings.Contains(out, key) {
		t.Fatalf("the key was shown: %s", out)
	}
	home := filepath.Join(g.dataDir, "profiles", "oai")
	auth, err := os.ReadFile(filepath.Join(home, "auth.json"))
	if err != nil || !strings.Contains(string(auth), key) {
		t.Fatalf("codex's login in the profile's home: %v %s", err, auth)
	}
	if secrets, _ := os.ReadDir(filepath.Join(g.dataDir, "profiles", ".secrets")); len(secrets) != 0 {
		t.Fatalf("Meridian kept a copy of the key: %v", secrets)
	}
	profileCmd("sk-ant-SECRET\n", "add", "claudeapi", "--kind", "api")
	// The profile's home answers through its own provider, so no request
	// leaves the machine.
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("model_provider = \"fake\"\ncheck_for_update_on_startup = false\n"+
		"[model_providers.fake]\nname = \"fake\"\nbase_url = %q\nwire_api = \"responses\"\n", other.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	g.start("--backend", "codex", "--codex-path", testkit.CodexPath(t), "--spares", "0")
	ask := func(profileName string) (int, string) {
		header := []string{"X-Claude-Code-Session-Id", "conv-" + profileName}
		if profileName != "" {
			header = append(header, "X-Meridian-Profile", profileName)
		}
		resp, body, err := g.post(`{"model":"gpt-test","max_tokens":50,"messages":[{"role":"user","content":"whose home?"}]}`, header...)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := ask(""); code != 200 || !strings.Contains(body, "from the default home") {
		t.Fatalf("default: %d %s", code, body)
	}
	if code, body := ask("oai"); code != 200 || !strings.Contains(body, "from the profile's home") {
		t.Fatalf("profile oai: %d %s", code, body)
	}
	if code, body := ask("claudeapi"); code != 400 || !strings.Contains(body, "unknown profile") {
		t.Fatalf("a claude profile under --backend codex: %d %s", code, body)
	}
	homes := map[string]bool{}
	for _, pid := range g.codexes() {
		env, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		for _, kv := range strings.Split(string(env), "\x00") {
			if h, ok := strings.CutPrefix(kv, "CODEX_HOME="); ok {
				homes[h] = true
			}
			if strings.Contains(kv, "SECRET") {
				t.Errorf("codex %d has a secret in its environment: %s", pid, kv)
			}
		}
	}
	if !homes[home] || len(homes) != 2 {
		t.Fatalf("codex homes: %v", homes)
	}
	if list := profileCmd("", "list", "--json"); !strings.Contains(list, `"name":"oai"`) || strings.Contains(list, key) {
		t.Fatalf("profile list: %s", list)
	}
}

// A spare codex answers a new conversation's first turn (and another
// takes its place); a conversation's codex is frozen while it waits and
// thawed for its next turn, on the same process.
func TestCodexSparesAndFreezing(t *testing.T) {
	g := unstartedCodexGateway(t)
	g.up.Script = numbered
	g.start("--backend", "codex", "--codex-path", testkit.CodexPath(t), "--spares", "1")
	// pidOf is the process the conversation's last turn ran on.
	// The turn's log line may come a moment after its answer.
	logged := map[string]int{}
	pidOf := func(conv string) int {
		var pid int
		if err := testkit.WaitFor(10*time.Second, func() error {
			m := regexp.MustCompile(`msg="turn done".* conversation=`+conv+` .* pid=(\d+)`).FindAllStringSubmatch(g.log.String(), -1)
			if len(m) <= logged[conv] {
				return fmt.Errorf("no new turn of %s in the log", conv)
			}
			logged[conv] = len(m)
			pid, _ = strconv.Atoi(m[len(m)-1][1])
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return pid
	}
	turn := func(conv string, msgs []sdk.MessageParam, want string) []sdk.MessageParam {
		msg, err := g.anthropic(conv).Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 50, Messages: msgs})
		if err != nil || msg.Content[0].Text != want {
			t.Fatalf("%s: %v %+v", conv, err, msg)
		}
		return append(msgs, msg.ToParam())
	}
	a := turn("codex-a", []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("first of a"))}, "answer 1")
	first := pidOf("codex-a")
	// After a new conversation, a spare waits for the next one, which
	// runs on it: on a process that was there before it came.
	var before []int
	if err := testkit.WaitFor(30*time.Second, func() error {
		if g.spares() != 1 {
			return errors.New("no spare codex waits")
		}
		before = g.codexes()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	turn("codex-b", []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("first of b"))}, "answer 2")
	if got := pidOf("codex-b"); got == first || !slices.Contains(before, got) {
		t.Fatalf("b's first turn ran on %d, not on a spare of %v", got, before)
	}
	state := func(pid int) byte {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) {
			return b[i+2]
		}
		return '?'
	}
	if err := testkit.WaitFor(30*time.Second, func() error {
		if s := state(first); s != 'T' {
			return fmt.Errorf("a's codex is in state %c, not stopped", s)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a = append(a, sdk.NewUserMessage(sdk.NewTextBlock("second of a")))
	turn("codex-a", a, "answer 3")
	if got := pidOf("codex-a"); got != first {
		t.Fatalf("a's second turn ran on %d, not on its frozen process %d", got, first)
	}
	reqs := g.up.Requests()
	if last, _ := json.Marshal(reqs[len(reqs)-1]["input"]); strings.Count(string(last), "first of a") != 1 || strings.Contains(string(last), "first of b") {
		t.Fatalf("a's second turn's thread: %s", last)
	}
}

// After meridian restarts, a conversation's next turn resumes its codex
// thread in a new process, with its history, writing only the new
// message.
func TestCodexResumesAfterRestart(t *testing.T) {
	g := unstartedCodexGateway(t)
	g.up.Script = numbered
	args := []string{"--backend", "codex", "--codex-path", testkit.CodexPath(t), "--spares", "0"}
	g.start(args...)
	client := g.anthropic("codex-restart")
	msgs := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("before the restart"))}
	msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 50, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Wait(); err != nil {
		t.Fatalf("meridian's exit: %v", err)
	}
	if left := g.codexes(); len(left) != 0 {
		t.Fatalf("codex processes outlived meridian: %v", left)
	}
	g.start(args...)
	client = g.anthropic("codex-restart")
	msgs = append(msgs, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("after the restart")))
	msg, err = client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "gpt-test", MaxTokens: 50, Messages: msgs})
	if err != nil || msg.Content[0].Text != "answer 2" {
		t.Fatalf("after the restart: %v %+v", err, msg)
	}
	last, _ := json.Marshal(g.up.Requests()[1]["input"])
	if strings.Count(string(last), "before the restart") != 1 || !strings.Contains(string(last), "answer 1") ||
		strings.Contains(string(last), "conversation_history") {
		t.Fatalf("the resumed thread: %s", last)
	}
}
