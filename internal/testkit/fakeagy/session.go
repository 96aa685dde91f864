package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// session is one process's conversation: a one-shot -p turn, or a
// persistent stream-json session reading a turn per stdin line.
type session struct {
	sc      *scenario
	o       options
	out     *writer
	log     *callLog
	conv    *conversation
	turns   int         // turns this process ran
	inTurn  atomic.Bool // a turn runs: a signal ends it with a result
	started time.Time
	mcp     map[string]*mcpClient // MCP servers connected, by name
	// lastOutput is the last tool output, which a response's text quotes
	// where it says {{tool_output}}; instructions are the AGENTS.md of the
	// --add-dir folders, quoted where it says {{instructions}}.
	lastOutput   string
	instructions string
	// steer is what PreInvocation hooks injected before the latest model
	// call, quoted where a response says {{steer}}; invocations counts
	// the turn's model calls.
	steer       string
	invocations int
}

func newSession(sc *scenario, o options, out *writer, log *callLog) *session {
	s := &session{sc: sc, o: o, out: out, log: log, started: time.Now()}
	var found []string
	for _, d := range o.addDirs {
		if b, err := os.ReadFile(filepath.Join(d, "AGENTS.md")); err == nil {
			found = append(found, string(b))
		}
	}
	s.instructions = strings.Join(found, "\n")
	log.write(map[string]any{"agents_md": found})
	if schema := s.schema(); schema != nil {
		log.write(map[string]any{"json_schema": string(schema)})
	}
	return s
}

// start opens the conversation and writes init (a replayed recording's
// own init, when the scenario replays one).
func (s *session) start() {
	s.conv = openConversation(s.o.conversation)
	time.Sleep(time.Duration(s.sc.InitDelayMS) * time.Millisecond)
	if first := s.recording(); len(first) > 0 {
		s.out.raw(append(first[0], '\n'))
	} else {
		init := initBody{Model: s.o.model, Cwd: cwd(), Tools: builtinTools, PermissionMode: "request-review", JSONSchema: s.schema()}
		if s.o.skipPermissions {
			init.PermissionMode = "always-proceed"
		}
		s.out.line(initEvent{Event: "init", ConversationID: s.conv.ID, Init: init})
	}
	s.conv.save() // every start creates the conversation
	if s.sc.Grandchild {
		// Holds stdout open and outlives this process unless its group is
		// killed.
		child := exec.Command("sleep", "3600")
		child.Stdout = os.Stdout
		if child.Start() == nil {
			s.log.write(map[string]any{"grandchild": child.Process.Pid})
		}
	}
}

// run is the persistent session: init before any input, then a turn per
// user line, until stdin ends. It returns the exit code.
func (s *session) run(stdin io.Reader) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if s.sc.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	go func() {
		<-sigs
		if s.inTurn.Load() {
			s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", "context canceled")})
		}
		os.Exit(1)
	}()
	s.start()
	if s.sc.EarlyStderr != "" {
		stdin = &earlyStderr{r: stdin, line: s.sc.EarlyStderr, atStart: true}
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		s.log.write(map[string]any{"stdin": line})
		prompt, code, ok := s.decode(line)
		if !ok {
			if code != 0 {
				return code
			}
			continue
		}
		if code := s.turn(prompt); code >= 0 {
			return code
		}
	}
	return 0
}

// decode reads one stdin line as agy does: it returns the prompt, or
// whether to go on (ok false, code 0) or leave with code.
func (s *session) decode(line string) (prompt string, code int, ok bool) {
	var msg struct {
		Event   *string `json:"event"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil {
		s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", "failed to decode stream input: "+err.Error())})
		return "", 1, false
	}
	switch {
	case msg.Event == nil:
		s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", `stream input message is missing the "event" field`)})
		return "", 1, false
	case *msg.Event == "control_request" || *msg.Event == "control_response":
		s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", "stream input "+*msg.Event+" messages are reserved")})
		return "", 2, false
	case *msg.Event != "user":
		fmt.Fprintf(os.Stderr, "warning: ignoring unsupported stream input message event %q\n", *msg.Event)
		return "", 0, false
	}
	var text string
	if json.Unmarshal(msg.Message.Content, &text) != nil {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(msg.Message.Content, &blocks)
		var parts []string
		for _, b := range blocks {
			if b.Type != "text" {
				s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", fmt.Sprintf("stream input content block type %q is not supported (only \"text\")", b.Type))})
				return "", 1, false
			}
			parts = append(parts, b.Text)
		}
		text = strings.Join(parts, "\n")
	}
	if strings.HasPrefix(text, "/") && !s.o.disableSlash {
		return "", 2, false
	}
	return text, 0, true
}

// turn plays one turn and writes its result. It returns the exit code to
// leave with, or -1 to go on.
func (s *session) turn(prompt string) int {
	s.inTurn.Store(true)
	defer s.inTurn.Store(false)
	t := s.sc.turnFor(prompt)
	s.turns++
	s.conv.Prompts = append(s.conv.Prompts, prompt)
	if t.Stall {
		select {}
	}
	if rec := s.recording(); len(rec) > 0 && s.turns == 1 {
		for _, line := range rec[1:] {
			s.out.raw(append(line, '\n'))
		}
		return -1
	}
	s.step(stepBody{State: "DONE", Type: "user_input"})
	if s.conv.isResumed && s.turns == 1 {
		s.step(stepBody{State: "DONE", Type: "system_message", Duration: 0.0001})
	}
	if t.Garbage {
		s.out.raw([]byte("this is not json\n"))
	}
	if t.LongLine > 0 {
		s.out.raw(append(bytes.Repeat([]byte("x"), t.LongLine), '\n'))
	}
	if t.LongStderr > 0 {
		w := bufio.NewWriter(os.Stderr)
		_, _ = w.Write(append(bytes.Repeat([]byte("e"), t.LongStderr), '\n'))
		for range 256 {
			_, _ = w.Write(append(bytes.Repeat([]byte("f"), 1023), '\n'))
		}
		_ = w.Flush()
	}
	var answer strings.Builder
	var turnUsage usage
	denied := false
	for _, st := range t.Steps {
		if t.Crash {
			s.out.raw([]byte(`{"event":"step_update","step_upd`))
			os.Exit(1)
		}
		if t.PrintTimeout && len(answer.String()) > 0 {
			return s.printTimeout(answer.String())
		}
		switch st.Type {
		case "agent_response":
			s.steer = strings.Join(s.preInvocation(s.invocations), "\n")
			s.invocations++
			s.respond(st, &answer, &turnUsage)
		case "tool":
			st.Params = attachmentParams(cwdParams(st.Params), prompt)
			st.Args = attachmentParams(cwdParams(st.Args), prompt)
			if !s.tool(st) {
				denied = true
			}
		default:
			s.step(stepBody{State: "DONE", Type: st.Type, Duration: 0.01})
		}
		if denied {
			break
		}
	}
	status, errText := t.Status, t.Error
	if status == "" {
		status = "SUCCESS"
	}
	response := answer.String()
	if denied {
		status, response = "CANCELED", ""
		fmt.Fprintln(os.Stderr, `jetski: no output produced — a tool required the "command" permission that headless mode cannot prompt for, so it was auto-denied. Add an allow-rule under permissions.allow in settings.json (e.g. command(<target>)). Alternatively, re-run with --dangerously-skip-permissions to auto-approve all tools.`)
	}
	if t.AgyError != "" {
		fmt.Fprintln(os.Stderr, "AGY_ERROR: "+t.AgyError)
	}
	var structured json.RawMessage
	if s.schema() != nil && t.Structured != nil && !denied {
		// The structured answer costs an internal turn of its own.
		var line bytes.Buffer
		_ = json.Compact(&line, t.Structured)
		s.respond(step{Type: "agent_response", Text: line.String() + "\n"}, &answer, &turnUsage)
		s.step(stepBody{State: "DONE", Type: "finish", Duration: 0.01})
		response = answer.String()
		structured = line.Bytes()
		s.conv.NumTurns++
	}
	s.conv.NumTurns++
	s.conv.Usage = s.conv.Usage.plus(turnUsage)
	s.conv.Duration += time.Since(s.started).Seconds()
	s.conv.save()
	res := s.result(status, response, errText)
	if structured != nil {
		res.StructuredOutput, res.JSONSchema = structured, s.schema()
	}
	s.out.line(resultEvent{Event: "result", Result: res})
	if t.StderrAfter != "" {
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintln(os.Stderr, t.StderrAfter)
	}
	if t.Exit != nil {
		return *t.Exit
	}
	if s.o.print != "" {
		if status != "SUCCESS" {
			return 1
		}
		return 0
	}
	return -1
}

// respond writes an agent_response step: text in ACTIVE fragments, then
// DONE with the last fragment and the usage.
func (s *session) respond(st step, answer *strings.Builder, total *usage) {
	u := usage{Input: 10, Output: 1, Total: 11}
	if st.Usage != nil {
		u = *st.Usage
	}
	*total = total.plus(u)
	idx := s.conv.NextStep
	frags := fragments(strings.NewReplacer("{{tool_output}}", s.lastOutput, "{{instructions}}", strings.TrimSpace(s.instructions), "{{steer}}", s.steer).Replace(st.Text))
	for i, f := range frags {
		answer.WriteString(f)
		if i < len(frags)-1 {
			s.stepAt(idx, stepBody{State: "ACTIVE", Type: "agent_response", TextDelta: f})
			time.Sleep(time.Duration(s.sc.FragmentMS) * time.Millisecond)
			continue
		}
		s.stepAt(idx, stepBody{State: "DONE", Type: "agent_response", TextDelta: f, Duration: 0.5, Usage: &u})
	}
	if len(frags) == 0 {
		s.stepAt(idx, stepBody{State: "DONE", Type: "agent_response", Duration: 0.5, Usage: &u})
	}
	s.conv.NextStep++
}

// fragments cuts text into pieces of a few words, the last being its
// final line break when it has one.
func fragments(text string) []string {
	var out []string
	body, nl := strings.CutSuffix(text, "\n")
	words := strings.SplitAfter(body, " ")
	for i := 0; i < len(words); i += 3 {
		out = append(out, strings.Join(words[i:min(i+3, len(words))], ""))
	}
	if nl {
		out = append(out, "\n")
	}
	if len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	return out
}

// tool writes a tool step: ACTIVE, the PreToolUse hooks, then DONE or
// ERROR. Without --dangerously-skip-permissions a tool that the hooks did
// not deny is soft-denied: DONE without output, and tool reports false.
func (s *session) tool(st step) bool {
	idx := s.conv.NextStep
	s.conv.NextStep++
	params := st.Params
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	if st.Tool == "call_mcp_tool" && st.Output == nil && s.o.skipPermissions {
		params = s.withArguments(params)
	}
	info := &toolInfo{Name: st.Tool, Parameters: params}
	settle := func(state string) {
		s.stepAt(idx, stepBody{State: state, Type: "tool", ToolName: st.Tool, Duration: 0.1, ToolInfo: info})
	}
	s.stepAt(idx, stepBody{State: "ACTIVE", Type: "tool", ToolName: st.Tool, ToolInfo: info})
	args := st.Args
	if args == nil {
		args = params
	}
	if verdict := s.preToolUse(idx, st.Tool, args); verdict != "" {
		info.Error = &toolError{Type: "TOOL_ERROR", Message: verdict}
		settle("ERROR")
		return true
	}
	switch {
	case !s.o.skipPermissions:
		settle("DONE")
		return false
	case st.Error != "":
		info.Error = &toolError{Type: "TOOL_ERROR", Message: st.Error}
		settle("ERROR")
	case st.Tool == "view_file" && st.Output == nil:
		var p struct{ AbsolutePath string }
		_ = json.Unmarshal(params, &p)
		data, err := os.ReadFile(p.AbsolutePath)
		if err != nil {
			info.Error = &toolError{Type: "TOOL_ERROR", Message: "cannot read the file"}
			settle("ERROR")
			return true
		}
		sum := sha256.Sum256(data)
		out := fmt.Sprintf("read %d bytes, sha256 %x", len(data), sum)
		s.lastOutput = out
		info.Output = &out
		settle("DONE")
	case st.Tool == "call_mcp_tool" && st.Output == nil:
		var p mcpParams
		_ = json.Unmarshal(params, &p)
		out, errText := s.callMCP(p)
		if errText != "" {
			info.Error = &toolError{Type: "TOOL_ERROR", Message: errText}
			settle("ERROR")
			return true
		}
		s.lastOutput = out
		info.Output = &out
		settle("DONE")
	case st.Output == nil && (st.Tool == "open_browser_url" || strings.HasPrefix(st.Tool, "browser_")):
		out := s.openBrowser(params)
		s.lastOutput, info.Output = out, &out
		settle("DONE")
	case st.Output == nil && st.Tool == "invoke_subagent":
		var p struct {
			Subagents []struct{ Prompt, Workspace string }
		}
		_ = json.Unmarshal(params, &p)
		var ran []string
		for _, a := range p.Subagents {
			ran = append(ran, fmt.Sprintf("a subagent did %q in %s", a.Prompt, a.Workspace))
		}
		out := strings.Join(ran, "; ")
		s.lastOutput, info.Output = out, &out
		settle("DONE")
	default:
		info.Output = st.Output
		if st.Output != nil {
			s.lastOutput = *st.Output
		}
		settle("DONE")
	}
	return true
}

// openBrowser stands in for agy's browser: it keeps its profile where a
// Chromium started by agy would (CHROME_CONFIG_HOME, else
// XDG_CONFIG_HOME, else ~/.config), and says where.
func (s *session) openBrowser(params json.RawMessage) string {
	base := os.Getenv("CHROME_CONFIG_HOME")
	if base == "" {
		base = os.Getenv("XDG_CONFIG_HOME")
	}
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".config")
	}
	profile := filepath.Join(base, "google-chrome")
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o700); err == nil {
		_ = os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(`{"fakeagy":true}`), 0o600)
	}
	s.log.write(map[string]any{"browser_profile": profile})
	var p struct{ Url string }
	_ = json.Unmarshal(params, &p)
	return fmt.Sprintf("opened %s in the browser", p.Url)
}

// step writes a step at the next index.
func (s *session) step(b stepBody) {
	s.stepAt(s.conv.NextStep, b)
	s.conv.NextStep++
}

func (s *session) stepAt(idx int, b stepBody) {
	b.ConversationID, b.Index = s.conv.ID, idx
	s.out.line(stepEvent{Event: "step_update", Step: b})
}

// result is a turn's result; its totals are the conversation's.
func (s *session) result(status, response, errText string) resultBody {
	r := resultBody{Status: status, Response: response, Error: errText}
	if s.conv != nil {
		r.ConversationID, r.NumTurns, r.Usage, r.Duration = s.conv.ID, s.conv.NumTurns, s.conv.Usage, s.conv.Duration
	}
	return r
}

// recording is the scenario's recorded stream, line by line (nil when it
// replays none).
func (s *session) recording() [][]byte {
	if s.sc.Replay == "" {
		return nil
	}
	b, err := os.ReadFile(s.sc.Replay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagy:", err)
		os.Exit(1)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// printTimeout ends a turn that ran past --print-timeout, as the version
// being played does.
func (s *session) printTimeout(partial string) int {
	s.conv.NumTurns++
	s.conv.save()
	if olderThan(s.sc.Version, "1.1.28") {
		s.out.line(resultEvent{Event: "result", Result: s.result("ERROR", "", "timeout waiting for response")})
		return 1
	}
	fmt.Fprintf(os.Stderr, "[agy] print timeout after %s with turn in progress; returning partial output\n", s.o.printTimeout)
	r := s.result("SUCCESS", partial, "")
	r.Usage = usage{}
	s.out.line(resultEvent{Event: "result", Result: r})
	return -1
}

// olderThan compares dotted versions numerically.
func olderThan(v, than string) bool {
	a, b := strings.Split(v, "."), strings.Split(than, ".")
	for i := range max(len(a), len(b)) {
		var x, y int
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// attachedFile finds a file Meridian attached, in a prompt.
var attachedFile = regexp.MustCompile(`\[Attached [^\]]*?: ([^\s,]+)[^\]]*? — read (?:it|them)`)

// attachmentParams fills {{attachment}} in a tool step's parameters with
// the path of the first file the prompt says was attached.
func attachmentParams(params json.RawMessage, prompt string) json.RawMessage {
	if !bytes.Contains(params, []byte("{{attachment}}")) {
		return params
	}
	m := attachedFile.FindStringSubmatch(prompt)
	if m == nil {
		return params
	}
	path, _ := json.Marshal(m[1])
	return bytes.ReplaceAll(params, []byte(`"{{attachment}}"`), path)
}

// earlyStderr writes its line to stderr when a stdin line begins to
// arrive, and pauses before reading on.
type earlyStderr struct {
	r       io.Reader
	line    string
	atStart bool
}

func (e *earlyStderr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n > 0 {
		if e.atStart {
			fmt.Fprintln(os.Stderr, e.line)
			time.Sleep(300 * time.Millisecond)
		}
		e.atStart = p[n-1] == '\n'
	}
	return n, err
}

// schema is --json-schema's schema, given as JSON or as a file's path;
// nil without one.
func (s *session) schema() json.RawMessage {
	v := strings.TrimSpace(s.o.jsonSchema)
	if v == "" {
		return nil
	}
	b := []byte(v)
	if !strings.HasPrefix(v, "{") {
		var err error
		if b, err = os.ReadFile(v); err != nil {
			return nil
		}
	}
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return nil
	}
	return out.Bytes()
}

// cwdParams fills {{cwd}} in a tool step's parameters with the process's
// working folder (the session's project).
func cwdParams(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte("{{cwd}}")) {
		return params
	}
	dir, _ := json.Marshal(cwd())
	return bytes.ReplaceAll(params, []byte("{{cwd}}"), dir[1:len(dir)-1])
}
