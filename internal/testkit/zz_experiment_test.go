package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const claudeBin = "/work/main/.tools/claude/2.1.332/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

type exp struct {
	t     *testing.T
	up    *Upstream
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	start time.Time
}

func startCLI(t *testing.T, up *Upstream, extraEnv []string, args ...string) *exp {
	home := t.TempDir()
	base := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--include-partial-messages", "--setting-sources=", "--tools=", "--permission-prompt-tool=stdio", "--model=my-fake-model"}
	cmd := exec.Command(claudeBin, append(base, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + home, "HOME=" + home, "ANTHROPIC_BASE_URL=" + up.URL, "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=1", "CLAUDE_CODE_ENTRYPOINT=sdk-go", "IS_SANDBOX=1"}, extraEnv...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	e := &exp{t: t, up: up, cmd: cmd, stdin: stdin, lines: make(chan string, 1000), start: time.Now()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				e.lines <- l
			}
			if err != nil {
				close(e.lines)
				return
			}
		}
	}()
	return e
}

func (e *exp) send(v any) { b, _ := json.Marshal(v); e.stdin.Write(append(b, '\n')) }
func (e *exp) user(text string) {
	e.send(map[string]any{"type": "user", "session_id": "", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}, "parent_tool_use_id": nil})
}

// readUntil prints lines until a result (or EOF); returns the lines.
func (e *exp) readUntil(kind string, timeout time.Duration) []string {
	var out []string
	to := time.After(timeout)
	for {
		select {
		case l, ok := <-e.lines:
			if !ok {
				fmt.Printf("[%6dms] EOF\n", time.Since(e.start).Milliseconds())
				return out
			}
			out = append(out, l)
			short := l
			if len(short) > 700 && os.Getenv("FULL") == "" {
				short = short[:700] + "…"
			}
			fmt.Printf("[%6dms] %s", time.Since(e.start).Milliseconds(), short)
			var m map[string]any
			json.Unmarshal([]byte(l), &m)
			if m["type"] == kind {
				return out
			}
		case <-to:
			fmt.Println("TIMEOUT")
			return out
		}
	}
}

func (e *exp) close() {
	e.stdin.Close()
	done := make(chan error, 1)
	go func() {
		for range e.lines {
		}
		done <- e.cmd.Wait()
	}()
	select {
	case err := <-done:
		fmt.Printf("[%6dms] exit: %v\n", time.Since(e.start).Milliseconds(), err)
	case <-time.After(10 * time.Second):
		fmt.Println("no exit in 10s")
		e.cmd.Process.Kill()
		<-done
	}
}

func dumpReqs(up *Upstream) {
	for i, r := range up.Requests() {
		fmt.Printf("--- upstream request %d %s?%s\n", i, r.Path, r.Query)
		b := r.Body
		keys := []string{}
		for k := range b {
			keys = append(keys, k)
		}
		fmt.Println("keys:", keys)
		js, _ := json.Marshal(map[string]any{"system": b["system"], "messages": b["messages"], "max_tokens": b["max_tokens"], "tools": b["tools"], "thinking": b["thinking"], "stream": b["stream"]})
		s := string(js)
		if len(s) > 4000 && os.Getenv("FULL") == "" {
			s = s[:4000]
		}
		fmt.Println(s)
	}
}

func TestExpBasic(t *testing.T) {
	if os.Getenv("EXP") != "basic" {
		t.Skip()
	}
	up := NewUpstream(t)
	up.Always(Reply{Text: "Hello from the fake", ChunkSize: 5, Usage: Usage{InputTokens: 11, OutputTokens: 7, CacheReadInputTokens: 3}})
	e := startCLI(t, up, strings.Fields(os.Getenv("XENV")))
	e.send(map[string]any{"type": "control_request", "request_id": "init1", "request": map[string]any{"subtype": "initialize", "systemPrompt": []string{"You are a terse test assistant."}}})
	e.user("hi there")
	e.readUntil("result", 30*time.Second)
	e.user("second turn")
	e.readUntil("result", 30*time.Second)
	e.close()
	dumpReqs(up)
}

func TestExpScript(t *testing.T) {
	name := os.Getenv("EXP")
	if name == "" || name == "basic" {
		t.Skip()
	}
	up := NewUpstream(t)
	switch name {
	case "plain":
		up.Always(Reply{Text: "plain answer", Usage: Usage{InputTokens: 4, OutputTokens: 2}})
	case "429":
		up.Always(Reply{Status: 429, Headers: map[string]string{"retry-after": "7",
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-reset":                fmt.Sprint(time.Now().Add(2 * time.Hour).Unix()),
			"anthropic-ratelimit-unified-5h-status":            "rejected",
			"anthropic-ratelimit-unified-5h-reset":             fmt.Sprint(time.Now().Add(2 * time.Hour).Unix()),
			"anthropic-ratelimit-unified-5h-utilization":       "1.0",
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		}})
	case "ok-ratelimit-headers":
		up.Always(Reply{Text: "fine", Usage: Usage{InputTokens: 3, OutputTokens: 2}, Headers: map[string]string{
			"anthropic-ratelimit-unified-status":               "allowed_warning",
			"anthropic-ratelimit-unified-reset":                fmt.Sprint(time.Now().Add(2 * time.Hour).Unix()),
			"anthropic-ratelimit-unified-5h-status":            "allowed_warning",
			"anthropic-ratelimit-unified-5h-reset":             fmt.Sprint(time.Now().Add(2 * time.Hour).Unix()),
			"anthropic-ratelimit-unified-5h-utilization":       "0.9",
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		}})
	case "529":
		up.Always(Reply{Status: 529})
	case "500":
		up.Always(Reply{Status: 500})
	case "401":
		up.Always(Reply{Status: 401})
	case "toolong":
		up.Always(Reply{Status: 400, ErrorMessage: "prompt is too long: 250000 tokens > 200000 maximum"})
	case "break":
		up.Enqueue(Reply{Text: "Hello world, this is long", ChunkSize: 3, BreakAfter: 4, ChunkDelay: 100 * time.Millisecond})
		up.Always(Reply{Text: "Recovered answer", Usage: Usage{InputTokens: 4, OutputTokens: 2}})
	case "thinking":
		up.Always(Reply{Thinking: "let me think", Text: "answer", Usage: Usage{InputTokens: 4, OutputTokens: 2}})
	case "tooluse":
		up.Enqueue(Reply{Text: "calling", ToolUses: []ToolUse{{Name: "read", Input: map[string]any{"path": "x"}}}})
		up.Always(Reply{Text: "after tool", Usage: Usage{InputTokens: 4, OutputTokens: 2}})
	case "slow":
		up.Always(Reply{Text: "slow slow slow slow slow slow", ChunkSize: 2, ChunkDelay: 300 * time.Millisecond})
	case "maxtokens":
		up.Always(Reply{Text: "cut", StopReason: "max_tokens", Usage: Usage{InputTokens: 4, OutputTokens: 2}})
	}
	e := startCLI(t, up, strings.Fields(os.Getenv("XENV")), strings.Fields(os.Getenv("XARGS"))...)
	e.send(map[string]any{"type": "control_request", "request_id": "init1", "request": map[string]any{"subtype": "initialize", "systemPrompt": []string{"sys"}}})
	ut := os.Getenv("USERTEXT")
	if ut == "" {
		ut = "hi there"
	}
	if rc := os.Getenv("RAWCONTENT"); rc != "" {
		var content any
		json.Unmarshal([]byte(rc), &content)
		e.send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil, "message": map[string]any{"role": "user", "content": content}})
	} else {
		e.user(ut)
	}
	if name == "slow" {
		go func() {
			time.Sleep(1200 * time.Millisecond)
			fmt.Printf("[%6dms] >>> interrupt\n", time.Since(e.start).Milliseconds())
			e.send(map[string]any{"type": "control_request", "request_id": "int1", "request": map[string]any{"subtype": "interrupt"}})
		}()
	}
	e.readUntil("result", 60*time.Second)
	e.close()
	dumpReqs(up)
}

func TestExpMedia(t *testing.T) {
	if os.Getenv("EXP") != "media" {
		t.Skip()
	}
	up := NewUpstream(t)
	e := startCLI(t, up, nil)
	e.send(map[string]any{"type": "control_request", "request_id": "init1", "request": map[string]any{"subtype": "initialize", "systemPrompt": []string{"first block", "second block"}}})
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	e.send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil, "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "look"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}},
		map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "doc body"}, "title": "T"},
	}}})
	e.readUntil("result", 30*time.Second)
	e.close()
	for _, r := range up.Requests() {
		js, _ := json.Marshal(map[string]any{"system": r.Body["system"], "messages": r.Body["messages"]})
		fmt.Println(string(js))
	}
}

type sess struct{ home, dir string }

func startIn(t *testing.T, up *Upstream, s sess, args ...string) *exp {
	base := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--include-partial-messages", "--setting-sources=", "--tools=", "--permission-prompt-tool=stdio", "--model=my-fake-model", "--disable-slash-commands", "--strict-mcp-config"}
	cmd := exec.Command(claudeBin, append(base, args...)...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + s.home, "HOME=" + s.home, "ANTHROPIC_BASE_URL=" + up.URL, "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_ENTRYPOINT=sdk-go"}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	e := &exp{t: t, up: up, cmd: cmd, stdin: stdin, lines: make(chan string, 1000), start: time.Now()}
	if err := cmd.Start(); err != nil { t.Fatal(err) }
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for { l, err := r.ReadString('\n'); if l != "" { e.lines <- l }; if err != nil { close(e.lines); return } }
	}()
	e.send(map[string]any{"type": "control_request", "request_id": "init1", "request": map[string]any{"subtype": "initialize", "systemPrompt": []string{"sys"}}})
	return e
}

// quiet reads until result and returns assistant uuids, session id, and result line.
func (e *exp) turn(text string) (uuids []string, sid string, result string) {
	e.user(text)
	to := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-e.lines:
			if !ok { fmt.Println("EOF"); return }
			var m map[string]any
			json.Unmarshal([]byte(l), &m)
			switch m["type"] {
			case "assistant":
				uuids = append(uuids, fmt.Sprint(m["uuid"]))
			case "system":
				if m["subtype"] == "init" { sid = fmt.Sprint(m["session_id"]) }
			case "user":
				fmt.Println("USER LINE:", l[:min(len(l), 300)])
			case "result":
				return uuids, sid, l
			}
		case <-to:
			fmt.Println("TIMEOUT"); return
		}
	}
}

func lastMsgs(up *Upstream) {
	reqs := up.Requests()
	r := reqs[len(reqs)-1]
	var parts []string
	for _, m := range r.Messages() {
		mm := m.(map[string]any)
		if mm["role"] == "system" { continue }
		parts = append(parts, fmt.Sprintf("%s:%q", mm["role"], textOf(mm["content"])))
	}
	fmt.Println("   upstream saw:", strings.Join(parts, " | "))
}

func TestExpResume(t *testing.T) {
	if os.Getenv("EXP") != "resume" { t.Skip() }
	up := NewUpstream(t)
	n := 0
	up.Respond(func(r Request) Reply { n++; return Reply{Text: fmt.Sprintf("answer%d", n), Usage: Usage{InputTokens: 10 * n, OutputTokens: n}} })
	s := sess{home: t.TempDir(), dir: t.TempDir()}
	sid0 := "11111111-2222-4333-8444-555555555555"
	e := startIn(t, up, s, "--session-id="+sid0)
	u1, sid, r1 := e.turn("q1"); fmt.Println("T1", sid, u1); lastMsgs(up)
	u2, sid, r2 := e.turn("q2"); fmt.Println("T2", sid, u2); lastMsgs(up)
	_ = r1; _ = r2
	e.close()

	e = startIn(t, up, s, "--resume="+sid0)
	u3, sid, r3 := e.turn("q3"); fmt.Println("T3 resume", sid, u3); lastMsgs(up)
	fmt.Println("   result usage:", r3[strings.Index(r3, `"usage"`):strings.Index(r3, `"usage"`)+120])
	e.close()

	e = startIn(t, up, s, "--resume="+sid0, "--fork-session", "--resume-session-at="+u1[len(u1)-1])
	u4, sid, _ := e.turn("q4 after undo"); fmt.Println("T4 fork at u1", sid, u4); lastMsgs(up)
	e.close()

	e = startIn(t, up, s, "--resume="+sid0, "--resume-session-at="+u2[len(u2)-1])
	u5, sid, r5 := e.turn("q5 at u2 no fork"); fmt.Println("T5 at u2 nofork", sid, u5); lastMsgs(up)
	if strings.Contains(r5, "error") { fmt.Println(r5[:400]) }
	e.close()

	e = startIn(t, up, s, "--resume="+sid0, "--fork-session", "--session-id=99999999-2222-4333-8444-555555555555")
	u6, sid, r6 := e.turn("q6 fork with chosen id"); fmt.Println("T6 fork+session-id", sid, u6); lastMsgs(up)
	if strings.Contains(r6, "is_error\":true") { fmt.Println(r6[:600]) }
	e.close()

	s2 := sess{home: s.home, dir: t.TempDir()}
	e = startIn(t, up, s2, "--resume="+sid0)
	_, sid, r7 := e.turn("q7 other cwd"); fmt.Println("T7 other cwd", sid); lastMsgs(up)
	if strings.Contains(r7, "is_error\":true") { fmt.Println(r7[:600]) }
	e.close()
	out, _ := exec.Command("find", s.home, "-name", "*.jsonl").Output()
	fmt.Println(string(out))
}
