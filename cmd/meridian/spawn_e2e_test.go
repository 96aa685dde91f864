package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// spawnWorld is a project whose spawns run the real claude CLI against the
// fake upstream, driven through the built meridian binary as a user would.
type spawnWorld struct {
	t       *testing.T
	bin     string
	dataDir string
	project string
	env     []string
	marker  string
	up      *testkit.Upstream
}

func newSpawnWorld(t *testing.T, bin, claudePath string, extraEnv ...string) *spawnWorld {
	up := testkit.NewUpstream(t)
	env, marker := testkit.ClaudeEnv(t, up.URL)
	w := &spawnWorld{t: t, bin: bin, dataDir: t.TempDir(), project: t.TempDir(), marker: marker, up: up}
	w.env = append(env, "MERIDIAN_DATA_DIR="+w.dataDir, "MERIDIAN_CLAUDE_PATH="+claudePath)
	w.env = append(w.env, extraEnv...)
	// Every worker and claude process carries the marker: when the test
	// ends none may be left.
	t.Cleanup(func() {
		_ = testkit.WaitFor(20*time.Second, func() error {
			if len(testkit.Processes(marker)) > 0 {
				return errors.New("processes left")
			}
			return nil
		})
		if pids := testkit.Processes(marker); len(pids) > 0 {
			for _, pid := range pids {
				testkit.Kill(pid)
			}
			t.Errorf("processes left behind: %v", pids)
		}
	})
	return w
}

type result struct {
	out, err string
	code     int
}

// run runs one meridian command in the project and returns its output and
// exit status.
func (w *spawnWorld) run(args ...string) result {
	return w.runEnv(nil, args...)
}

func (w *spawnWorld) runEnv(extra []string, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, args...)
	cmd.Dir, cmd.Env = w.project, append(slices.Clone(w.env), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		w.t.Fatalf("meridian %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// must runs a command that has to succeed.
func (w *spawnWorld) must(args ...string) string {
	w.t.Helper()
	r := w.run(args...)
	if r.code != 0 {
		w.t.Fatalf("meridian %v: exit %d\n%s%s", args, r.code, r.out, r.err)
	}
	return r.out
}

// background starts a command and returns a function that waits for it.
func (w *spawnWorld) background(args ...string) (done <-chan result) {
	ch := make(chan result, 1)
	go func() { ch <- w.run(args...) }()
	return ch
}

// spawns lists every spawn of the project (a read that consumes nothing).
func (w *spawnWorld) spawns() map[string]spawnView {
	w.t.Helper()
	var v struct{ Spawns []spawnView }
	if err := json.Unmarshal([]byte(w.must("spawn", "list", "--all", "--json")), &v); err != nil {
		w.t.Fatal(err)
	}
	m := map[string]spawnView{}
	for _, s := range v.Spawns {
		m[s.ID] = s
	}
	return m
}

// until polls the spawns until cond holds.
func (w *spawnWorld) until(what string, cond func(map[string]spawnView) bool) map[string]spawnView {
	w.t.Helper()
	var s map[string]spawnView
	if err := testkit.WaitFor(60*time.Second, func() error {
		if s = w.spawns(); !cond(s) {
			return fmt.Errorf("waiting for %s: %+v", what, s)
		}
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	return s
}

func terminal(ids ...string) func(map[string]spawnView) bool {
	return func(s map[string]spawnView) bool {
		for _, id := range ids {
			switch s[id].Status {
			case "succeeded", "failed", "cancelled":
			default:
				return false
			}
		}
		return true
	}
}

// collect runs collect and decodes its one JSON object.
func (w *spawnWorld) collect(args ...string) Delivery {
	w.t.Helper()
	return decodeDelivery(w.t, w.run(append([]string{"spawn", "collect"}, args...)...))
}

// Delivery mirrors collect's output.
type Delivery struct {
	Kind string   `json:"kind"`
	IDs  []string `json:"ids"`
	Text string   `json:"text"`
}

func decodeDelivery(t *testing.T, r result) Delivery {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("collect: exit %d: %s", r.code, r.err)
	}
	var d Delivery
	dec := json.NewDecoder(strings.NewReader(r.out))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("collect printed %q: %v", r.out, err)
	}
	if dec.More() {
		t.Fatalf("collect printed more than one object: %q", r.out)
	}
	return d
}

// owedIDs is what collect would deliver now, sorted; nothing may be
// running when it is called, or it blocks.
func (w *spawnWorld) owedIDs() []string {
	w.t.Helper()
	d := w.collect()
	ids := slices.Clone(d.IDs)
	slices.Sort(ids)
	return ids
}

// gated answers each tagged prompt once its gate opens: the test decides
// when a child's model call ends.
type gated struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func (g *gated) gate(tag string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[string]chan struct{}{}
	}
	if g.gates[tag] == nil {
		g.gates[tag] = make(chan struct{})
	}
	return g.gates[tag]
}

func (g *gated) open(tags ...string) {
	for _, tag := range tags {
		close(g.gate(tag))
	}
}

func tagOf(r testkit.Request) string {
	text := r.AllText()
	for _, tag := range []string{"task-alpha", "task-beta", "task-gamma", "task-delta", "task-epsilon", "task-zeta"} {
		if strings.Contains(text, tag) {
			return tag
		}
	}
	return ""
}

func (w *spawnWorld) requestsFor(tags ...string) bool {
	seen := map[string]bool{}
	for _, r := range w.up.Requests() {
		seen[tagOf(r)] = true
	}
	for _, tag := range tags {
		if !seen[tag] {
			return false
		}
	}
	return true
}

func (w *spawnWorld) waitRequests(tags ...string) {
	w.t.Helper()
	if err := testkit.WaitFor(60*time.Second, func() error {
		if !w.requestsFor(tags...) {
			return fmt.Errorf("the children never called the model: %v", tags)
		}
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
}

// Three children, one failing: collect blocks while they run and then
// delivers headers only; --exclude, ack, and which reads consume.
func TestSpawnDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t))
	g := &gated{}
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		switch tag := tagOf(r); tag {
		case "task-gamma":
			return testkit.Reply{Gate: g.gate(tag), Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "scripted failure for gamma"}
		case "":
			return testkit.Reply{Text: "ok"}
		default:
			return testkit.Reply{Gate: g.gate(tag), Text: "REPORT-BODY " + tag + ": all good", Usage: testkit.Usage{InputTokens: 40, OutputTokens: 7}}
		}
	})

	// Nothing yet: collect says so at once.
	if d := w.collect(); d.Kind != "empty" || len(d.IDs) != 0 || d.Text != "" {
		t.Fatalf("collect with no children = %+v", d)
	}
	ids := []string{
		strings.TrimSpace(w.must("spawn", "-p", "task-alpha: check the build", "--desc", "alpha")),
		strings.TrimSpace(w.must("spawn", "-p", "task-beta: check the docs", "-m", "claude-sonnet-4-5")),
		strings.TrimSpace(w.must("spawn", "-p", "task-gamma: this one fails", "--cwd", os.TempDir())),
	}
	if !slices.Equal(ids, []string{"p1", "p2", "p3"}) {
		t.Fatalf("ids = %v", ids)
	}
	w.waitRequests("task-alpha", "task-beta", "task-gamma")

	// While they run, collect blocks.
	pending := w.background("spawn", "collect")
	select {
	case r := <-pending:
		t.Fatalf("collect returned while every child ran: %+v", r)
	case <-time.After(1500 * time.Millisecond):
	}
	g.open("task-alpha", "task-beta", "task-gamma")
	first := decodeDelivery(t, <-pending)
	if first.Kind != "delivery" || len(first.IDs) == 0 {
		t.Fatalf("first delivery = %+v", first)
	}
	checkHeaderOnly(t, first)

	all := w.until("all three to finish", terminal(ids...))
	if all["p1"].Status != "succeeded" || all["p2"].Status != "succeeded" || all["p3"].Status != "failed" {
		t.Fatalf("statuses: %s %s %s", all["p1"].Status, all["p2"].Status, all["p3"].Status)
	}
	if !strings.Contains(all["p3"].Error, "scripted failure") || all["p1"].CostUSD <= 0 && all["p1"].OutputTokens == 0 {
		t.Fatalf("p3 error %q, p1 cost %v tokens %d", all["p3"].Error, all["p1"].CostUSD, all["p1"].OutputTokens)
	}
	// A spawn without -m records the model the CLI chose, not "default".
	var ran string
	for _, r := range w.up.Requests() {
		if tagOf(r) == "task-alpha" {
			ran, _ = r.Body["model"].(string)
		}
	}
	if ran == "" || all["p1"].Model != ran || all["p2"].Model != "claude-sonnet-4-5" {
		t.Fatalf("recorded models %q and %q, the CLI ran %q for p1", all["p1"].Model, all["p2"].Model, ran)
	}

	// Nothing acked: everything is still owed, in one delivery.
	d := w.collect()
	if got := sorted(d.IDs); !slices.Equal(got, ids) {
		t.Fatalf("delivery ids = %v", d.IDs)
	}
	checkHeaderOnly(t, d)
	if !strings.Contains(d.Text, "p3 failed") || !strings.Contains(d.Text, "failure: ") ||
		!strings.Contains(d.Text, "task directory: "+os.TempDir()) || !strings.Contains(d.Text, "worker claude (claude-sonnet-4-5)") {
		t.Fatalf("delivery text:\n%s", d.Text)
	}
	if d := w.collect("--exclude", "p1,p3"); !slices.Equal(d.IDs, []string{"p2"}) {
		t.Fatalf("collect --exclude p1,p3 = %v", d.IDs)
	}

	// Reads that never consume.
	w.must("spawn", "list")
	w.must("spawn", "status")
	w.must("spawn", "status", "p1", "p2")
	if out := w.must("spawn", "report", "search", "all good"); !strings.Contains(out, "p1: REPORT-BODY task-alpha") {
		t.Fatalf("report search: %q", out)
	}
	if out := w.must("spawn", "log", "p1"); !strings.Contains(out, "REPORT-BODY task-alpha") || !strings.Contains(out, "done (success)") {
		t.Fatalf("log:\n%s", out)
	}
	w.must("spawn", "log", "p1", "--json")
	w.must("spawn", "show", "p1", "--no-observe")
	w.must("-C", w.project, "spawn", "show", "p1")
	w.must("-C", w.project, "spawn", "status", "--full")
	w.must("-C", w.project, "spawn", "report", "show", "p2")
	w.must("-C", w.project, "spawn", "wait")
	if r := w.run("-C", w.project, "spawn", "ack", "p1"); r.code == 0 || !strings.Contains(r.err, "-C") {
		t.Fatalf("ack with -C: exit %d %q", r.code, r.err)
	}
	if got := w.owedIDs(); !slices.Equal(got, ids) {
		t.Fatalf("after reads that must not consume, owed = %v", got)
	}

	// Reads that consume: show, status --full, report show.
	if out := w.must("spawn", "show", "p1"); !strings.Contains(out, "REPORT-BODY task-alpha") || !strings.Contains(out, "p1 succeeded") {
		t.Fatalf("show p1:\n%s", out)
	}
	if got := w.owedIDs(); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Fatalf("after show p1, owed = %v", got)
	}
	if out := w.must("spawn", "status", "--full", "p2"); !strings.Contains(out, "REPORT-BODY task-beta") {
		t.Fatalf("status --full p2:\n%s", out)
	}
	if got := w.owedIDs(); !slices.Equal(got, []string{"p3"}) {
		t.Fatalf("after status --full p2, owed = %v", got)
	}
	// ack is idempotent; then nothing is owed and nothing runs: empty at once.
	w.must("spawn", "ack", "p3", "p1")
	w.must("spawn", "ack", "p3")
	if d := w.collect(); d.Kind != "empty" {
		t.Fatalf("after ack, collect = %+v", d)
	}

	// Bad input: clear errors, non-zero exits, nothing recorded.
	for _, args := range [][]string{
		{"spawn", "show", "p99"}, {"spawn", "show", "x1"}, {"spawn", "ack", "p99"}, {"spawn", "cancel", "p1", "p99"},
		{"spawn", "-p", "a", "--prompt-file", "f"}, {"spawn", "--prompt-file", "/no/such/file"}, {"spawn", "-p", "x", "--cwd", "/no/such/dir"},
		{"spawn", "list", "--status", "done"}, {"spawn", "collect", "--exclude", "bogus"}, {"spawn", "wait", "--timeout", "-1s"},
	} {
		if r := w.run(args...); r.code == 0 || !strings.HasPrefix(r.err, "meridian: ") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.err)
		}
	}
	if n := len(w.spawns()); n != 3 {
		t.Fatalf("bad input recorded spawns: %d", n)
	}

	// A cancel that reports cancelled is consumed; with --no-observe it
	// stays owed.
	p4 := strings.TrimSpace(w.must("spawn", "-p", "task-delta: runs until cancelled"))
	p5 := strings.TrimSpace(w.must("spawn", "-p", "task-epsilon: runs until cancelled"))
	w.waitRequests("task-delta", "task-epsilon")
	if out := w.must("spawn", "cancel", p4); !strings.Contains(out, p4+" cancelled") {
		t.Fatalf("cancel %s: %q", p4, out)
	}
	if out := w.must("spawn", "cancel", "--no-observe", p5); !strings.Contains(out, p5+" cancelled") {
		t.Fatalf("cancel --no-observe %s: %q", p5, out)
	}
	if got := w.owedIDs(); !slices.Equal(got, []string{p5}) {
		t.Fatalf("after the cancels, owed = %v", got)
	}
	if out := w.must("spawn", "cancel", p5); !strings.Contains(out, "already cancelled") {
		t.Fatalf("cancelling a cancelled spawn: %q", out)
	}
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// checkHeaderOnly: a delivery names each child with its lookup and carries
// no report body.
func checkHeaderOnly(t *testing.T, d Delivery) {
	t.Helper()
	if strings.Contains(d.Text, "REPORT-BODY") {
		t.Fatalf("delivery carries a report body:\n%s", d.Text)
	}
	for _, id := range d.IDs {
		if !strings.Contains(d.Text, "report: meridian spawn show "+id+"\n") {
			t.Fatalf("delivery lacks the lookup for %s:\n%s", id, d.Text)
		}
	}
}

// A child works on its own: its tool calls are granted and run in its
// directory, and what it runs knows whose child it is.
func TestSpawnChildRunsTools(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t))
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		if !bytes.Contains(r.RawBody, []byte(`"tool_result"`)) {
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{
				"command":     `echo "$MERIDIAN_SPAWN_ID $MERIDIAN_DEPTH" > child.txt`,
				"description": "record who I am",
			}}}}
		}
		return testkit.Reply{Text: "wrote child.txt"}
	})
	r := w.run("spawn", "-p", "task-alpha: write child.txt", "--wait")
	if r.code != 0 || !strings.Contains(r.out, "wrote child.txt") {
		t.Fatalf("spawn --wait: exit %d\n%s%s", r.code, r.out, r.err)
	}
	b, err := os.ReadFile(w.project + "/child.txt")
	if err != nil || string(b) != "p1 1\n" {
		t.Fatalf("child.txt = %q, %v\n%s", b, err, w.run("spawn", "log", "p1").out)
	}
	// --wait showed the report: nothing is owed.
	if d := w.collect(); d.Kind != "empty" {
		t.Fatalf("after spawn --wait, collect = %+v", d)
	}
}
