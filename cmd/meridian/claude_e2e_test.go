package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/meridian-gw/meridian/internal/launch"
	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/mods"
)

// terminalSession is an interactive meridian claude under a
// pseudo-terminal: what it draws is drained (and kept, for a failure's
// message), keys are written to it.
type terminalSession struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	seen bytes.Buffer
	done chan error
}

func startTerminal(t *testing.T, w *spawnWorld, args ...string) *terminalSession {
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = w.project
	cmd.Env = append(w.env, "TERM=xterm-256color", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 140})
	if err != nil {
		t.Fatal(err)
	}
	s := &terminalSession{t: t, cmd: cmd, tty: tty, done: make(chan error, 1)}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			s.mu.Lock()
			s.seen.Write(buf[:n])
			if s.seen.Len() > 256<<10 {
				s.seen.Next(s.seen.Len() - 128<<10)
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
		tty.Close()
		<-drained
	})
	return s
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>78]`)

// screen is what the session drew last, control sequences removed.
func (s *terminalSession) screen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := ansi.ReplaceAllString(s.seen.String(), "")
	if len(text) > 4000 {
		text = text[len(text)-4000:]
	}
	return text
}

// command types a line and Enter, a moment apart, as a person would (a
// line and its Enter in one write reads as a paste).
func (s *terminalSession) command(line string) {
	s.t.Helper()
	if _, err := s.tty.WriteString(line); err != nil {
		s.t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := s.tty.WriteString("\r"); err != nil {
		s.t.Fatal(err)
	}
}

// waitScreen waits until what the session drew matches re.
func (s *terminalSession) waitScreen(re *regexp.Regexp, within time.Duration) {
	s.t.Helper()
	if err := testkit.WaitFor(within, func() error {
		if !re.MatchString(s.screen()) {
			return fmt.Errorf("the screen never showed %s", re)
		}
		return nil
	}); err != nil {
		s.t.Fatalf("%v:\n%s", err, s.screen())
	}
}

// exit leaves the REPL as a person would and waits for the process.
func (s *terminalSession) exit() error {
	s.t.Helper()
	s.command("/exit")
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(testkit.Scale(20 * time.Second)):
		s.t.Fatalf("claude did not exit after /exit; screen:\n%s", s.screen())
		return nil
	}
}

// trustProject writes the CLI's own settings so an interactive session
// starts straight at the prompt: onboarding done, the test key approved,
// the project trusted.
func trustProject(t *testing.T, w *spawnWorld) {
	t.Helper()
	env := envMap(w.env)
	state := map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"customApiKeyResponses":  map[string]any{"approved": []string{lastN(env["ANTHROPIC_API_KEY"], 20)}, "rejected": []string{}},
		"projects":               map[string]any{w.project: map[string]any{"hasTrustDialogAccepted": true}},
	}
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{env["CLAUDE_CONFIG_DIR"], env["HOME"]} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".claude.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func lastN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

var deliveryLine = regexp.MustCompile(`\[meridian-spawn-watch delivery ([0-9a-f]{16})\]`)

// scriptLead plays the model for a lead and its child. The lead's first
// turn starts child p2 through its Bash tool, then ends; turnEnded runs
// then. The child answers once childGate opens. A user turn (USER-NEXT)
// and the delivery turn get short answers; the CLI's side requests "ok".
func scriptLead(w *spawnWorld, childGate <-chan struct{}, turnEnded func()) {
	var once sync.Once
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		first := firstUserText(r)
		switch {
		case strings.Contains(first, "task-alpha"):
			return testkit.Reply{Gate: childGate, Text: "REPORT-BODY alpha: the build is green"}
		case !strings.Contains(first, "LEAD-START"):
			return testkit.Reply{Text: "ok"}
		case deliveryLine.MatchString(r.LastUserText()):
			return testkit.Reply{Text: "Noted: the child finished."}
		case strings.Contains(r.LastUserText(), "USER-NEXT"):
			return testkit.Reply{Text: "Still waiting for the child."}
		case !bytes.Contains(r.RawBody, []byte(`"tool_result"`)):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{
				"command":     `meridian spawn -p "task-alpha: check the build" --desc alpha`,
				"description": "start a child",
			}}}}
		default:
			once.Do(turnEnded)
			return testkit.Reply{Text: "Started p2; I will hear when it is done."}
		}
	})
}

// startLead runs meridian claude interactively with the lead's first
// prompt; Bash is granted by rule (auto mode would set the rule aside and
// ask a server-side check the fake upstream does not run).
func startLead(t *testing.T, w *spawnWorld) *terminalSession {
	return startTerminal(t, w, "claude", "LEAD-START: start a child to check the build",
		"--permission-mode", "default", "--allowedTools", "Bash")
}

// waitDelivery returns the delivery turn's request once it reaches the
// model.
func waitDelivery(t *testing.T, w *spawnWorld, s *terminalSession, within time.Duration) testkit.Request {
	t.Helper()
	var found testkit.Request
	if err := testkit.WaitFor(within, func() error {
		for _, r := range w.up.Requests() {
			if deliveryLine.MatchString(r.LastUserText()) {
				found = r
				return nil
			}
		}
		return errors.New("no delivery reached the model")
	}); err != nil {
		t.Fatalf("%v; spawns %+v\nrequests:\n%s\nscreen:\n%s\nmod log:\n%s",
			err, w.spawns(), requestSummary(w), s.screen(), modLog(t, w))
	}
	return found
}

// waitConsumed waits until nothing is owed to the lead p1 (its ack
// landed).
func waitConsumed(t *testing.T, w *spawnWorld) {
	t.Helper()
	if err := testkit.WaitFor(30*time.Second, func() error {
		if d := decodeDelivery(t, w.runEnv([]string{"MERIDIAN_SPAWN_ID=p1"}, "spawn", "collect")); d.Kind != "empty" {
			return fmt.Errorf("still owed after the delivery turn: %+v", d)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\nmod log:\n%s", err, modLog(t, w))
	}
}

func checkDelivered(t *testing.T, text string) {
	t.Helper()
	for _, want := range []string{"p2 succeeded", "alpha", "report: meridian spawn show p2"} {
		if !strings.Contains(text, want) {
			t.Fatalf("delivery lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "REPORT-BODY") {
		t.Fatalf("the delivery carries the report body:\n%s", text)
	}
}

// The whole path in the real engine: a lead claude, interactive under a
// pseudo-terminal, spawns a child during its turn; once the turn has ended
// the mod's collector blocks on the running child, then delivers its
// header as a new turn carrying a nonce, meridian spawn ack lands, and
// the child is consumed.
func TestSpawnWatchDeliversToAnIdleLead(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t), "MERIDIAN_SPAWN_REAP_GRACE=1ms",
		"MERIDIAN_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	trustProject(t, w)
	child := make(chan struct{})
	// The child answers a few seconds after the lead's turn has ended.
	scriptLead(w, child, func() { time.AfterFunc(4*time.Second, func() { close(child) }) })
	s := startLead(t, w)

	delivered := waitDelivery(t, w, s, 60*time.Second).LastUserText()
	checkDelivered(t, delivered)
	waitConsumed(t, w)
	// The mod's store is written after the ack returns.
	var log string
	if err := testkit.WaitFor(10*time.Second, func() error {
		if log = modLog(t, w); !strings.Contains(log, "acked p2") {
			return errors.New("the mod never logged its ack")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v; mod log:\n%s", err, log)
	}
	t.Logf("delivered turn:\n%s\nmod log:\n%s", delivered, log)
	spawns := w.spawns()
	if spawns["p1"].Kind != "primary" || spawns["p1"].Status != "running" || spawns["p2"].ParentID != "p1" {
		t.Fatalf("spawns: %+v", spawns)
	}

	// The status command answers in the session.
	s.command("/meridian-spawn-watch")
	s.waitScreen(regexp.MustCompile(`last\s*collector\s*verdict:\s*delivery\s*p2`), 20*time.Second)

	if err := s.exit(); err != nil {
		t.Fatalf("claude exited with %v; screen:\n%s", err, s.screen())
	}
	w.until("the session to end", terminal("p1"))
}

// In the real engine: the user's turn kills the collector (the process
// goes), the next idle starts another, and the delivery waits until the
// box has been quiet for 10 s after the user's typing.
func TestSpawnWatchYieldsToTheUser(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t), "MERIDIAN_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	trustProject(t, w)
	child := make(chan struct{})
	scriptLead(w, child, func() {})
	s := startLead(t, w)

	first := waitCollector(t, w, s, 0)
	s.command("USER-NEXT: anything new?")
	typed := time.Now()
	if err := testkit.WaitFor(15*time.Second, func() error {
		if slices.Contains(collectors(w.marker), first) {
			return fmt.Errorf("the collector %d outlived the user's turn", first)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\nmod log:\n%s", err, modLog(t, w))
	}
	if st := w.spawns()["p2"].Status; st != "running" {
		t.Fatalf("the child is %s; it should still run", st)
	}
	second := waitCollector(t, w, s, first)
	close(child)

	r := waitDelivery(t, w, s, 60*time.Second)
	checkDelivered(t, r.LastUserText())
	if quiet := r.At.Sub(typed); quiet < 9500*time.Millisecond {
		t.Fatalf("delivered %v after the user's typing; the box must be quiet for 10 s", quiet)
	}
	waitConsumed(t, w)
	t.Logf("collectors %d then %d; delivered %v after the last keystroke\nmod log:\n%s", first, second, r.At.Sub(typed).Round(time.Millisecond), modLog(t, w))
	if err := s.exit(); err != nil {
		t.Fatalf("claude exited with %v; screen:\n%s", err, s.screen())
	}
}

// collectors lists the live meridian spawn collect processes of a world.
func collectors(marker string) []int {
	var pids []int
	for _, pid := range testkit.Processes(marker) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(cmdline, []byte("spawn\x00collect")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitCollector waits for a collector other than not to run.
func waitCollector(t *testing.T, w *spawnWorld, s *terminalSession, not int) int {
	t.Helper()
	var found int
	if err := testkit.WaitFor(60*time.Second, func() error {
		for _, pid := range collectors(w.marker) {
			if pid != not {
				found = pid
				return nil
			}
		}
		return errors.New("no collector ran")
	}); err != nil {
		t.Fatalf("%v; requests:\n%s\nscreen:\n%s\nmod log:\n%s", err, requestSummary(w), s.screen(), modLog(t, w))
	}
	return found
}

func requestSummary(w *spawnWorld) string {
	var b strings.Builder
	for i, r := range w.up.Requests() {
		fmt.Fprintf(&b, "%d: first %.120q last %.200q\n", i, firstUserText(r), r.LastUserText())
	}
	return b.String()
}

func firstUserText(r testkit.Request) string {
	for _, m := range r.Messages() {
		msg, _ := m.(map[string]any)
		if msg["role"] != "user" {
			continue
		}
		b, _ := json.Marshal(msg["content"])
		return string(b)
	}
	return ""
}

// modLog is the spawn-watch mod's log as the CLI stored it for the plugin.
func modLog(t *testing.T, w *spawnWorld) string {
	t.Helper()
	env := envMap(w.env)
	var out strings.Builder
	dirs := []string{env["CLAUDE_CONFIG_DIR"]}
	if home := filepath.Join(env["HOME"], ".claude"); home != dirs[0] {
		dirs = append(dirs, home)
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "plugins", "store", "meridian-spawn-watch*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var v struct{ Log []string }
			if json.Unmarshal(b, &v) == nil {
				out.WriteString(strings.Join(v.Log, "\n"))
			}
		}
	}
	return out.String()
}

// In the real engine, under -p: the mod loads but stays inert. A finished
// child is owed, an answered turn ends, and the mod makes no call at all
// (the CLI's debug log names every call a mod makes).
func TestSpawnWatchInertUnderPrint(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t))
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(firstUserText(r), "task-alpha") {
			return testkit.Reply{Text: "REPORT-BODY alpha"}
		}
		return testkit.Reply{Text: "ok"}
	})
	w.must("spawn", "-p", "task-alpha: check the build")
	w.until("the child to finish", terminal("p1"))

	mod, err := launch.Install(t.TempDir(), mods.SpawnWatch())
	if err != nil {
		t.Fatal(err)
	}
	debug := filepath.Join(t.TempDir(), "debug.log")
	cmd := exec.Command(testkit.ClaudePath(t), "-p", "LEAD-START: hello", "--plugin-dir", mod, "--debug-file", debug)
	cmd.Dir = w.project
	cmd.Env = append(w.env, "PATH="+filepath.Dir(w.bin)+":"+envMap(w.env)["PATH"])
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	log, err := os.ReadFile(debug)
	if err != nil || !regexp.MustCompile(`hooks module meridian-spawn-watch@\S+ loaded`).Match(log) {
		t.Fatalf("the mod did not load (%v):\n%s", err, log)
	}
	// Inert: not even the status command is registered, and no process runs.
	for _, call := range []string{"$.command.register (meridian-spawn-watch)", "$.process.spawn (meridian-spawn-watch)", "$.process.run (meridian-spawn-watch)"} {
		if strings.Contains(string(log), call) {
			t.Fatalf("the mod made %s under -p", call)
		}
	}
	if l := modLog(t, w); l != "" {
		t.Fatalf("the mod logged under -p: %q", l)
	}
	if got := w.owedIDs(); !slices.Equal(got, []string{"p1"}) {
		t.Fatalf("owed after the -p session = %v", got)
	}
}
