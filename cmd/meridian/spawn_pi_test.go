package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// piRPC is the pinned Pi in RPC mode, set up by `meridian setup pi` (its
// model on the fake upstream, both extensions installed) and working in
// the spawn world's project as its root lead.
type piRPC struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	events []map[string]any
	done   chan struct{}
}

func startPi(t *testing.T, piBin string, w *spawnWorld, piHome string) *piRPC {
	t.Helper()
	cmd := exec.Command(piBin, "--mode", "rpc", "--no-session", "--model", "meridian/sonnet")
	cmd.Dir = w.project
	cmd.Env = append(append([]string{}, w.env...),
		"PATH="+filepath.Dir(w.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PI_CODING_AGENT_DIR="+piHome, "PI_OFFLINE=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &piRPC{t: t, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				p.mu.Lock()
				p.events = append(p.events, ev)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("pi's stderr:\n%s", stderr.String())
		}
	})
	return p
}

// kill ends Pi at once, as a crash would, and joins it.
func (p *piRPC) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	_ = p.cmd.Wait()
}

func (p *piRPC) send(v map[string]any) {
	p.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// status is the spawn watcher's last status line, as Pi sends it to an
// RPC client.
func (p *piRPC) status() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		ev := p.events[i]
		if ev["type"] == "extension_ui_request" && ev["method"] == "setStatus" && ev["statusKey"] == "meridian-spawn-watch" {
			s, _ := ev["statusText"].(string)
			return s, true
		}
	}
	return "", false
}

// Pi's spawn watcher carries finished children to the session and acks
// each delivery, as a receipt, only when Pi admits the message carrying
// it. A Pi killed with a delivery queued behind a running turn acked
// nothing: the result stays owed, and the next Pi delivers it and writes
// its receipt.
func TestPiAcksTheDeliveriesItAdmits(t *testing.T) {
	t.Parallel()
	piBin := testkit.PiPath(t)
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t))
	u, err := url.Parse(w.up.URL)
	if err != nil {
		t.Fatal(err)
	}
	piHome := filepath.Join(t.TempDir(), "pi")
	w.runEnv([]string{"PI_CODING_AGENT_DIR=" + piHome}, "setup", "pi", "--port", u.Port())
	for _, f := range []string{"models.json", "extensions/meridian.ts", "extensions/meridian-spawn-watch.ts"} {
		if _, err := os.Stat(filepath.Join(piHome, f)); err != nil {
			t.Fatalf("meridian setup pi: %v", err)
		}
	}

	hold := make(chan struct{})
	var closeHold sync.Once
	release := func() { closeHold.Do(func() { close(hold) }) }
	t.Cleanup(release)
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		text := r.AllText()
		switch {
		case strings.Contains(text, "CHILD TASK"):
			return testkit.Reply{Text: "the child's report"}
		case strings.Contains(r.LastUserText(), "HOLD THIS TURN"):
			return testkit.Reply{Text: "held", Gate: hold}
		case strings.Contains(text, "meridian spawn show p"):
			return testkit.Reply{Text: "noted"}
		}
		return testkit.Reply{Text: "ok"}
	})
	deliveredTo := func(id string) int {
		n := 0
		for _, r := range w.up.Requests() {
			if strings.Contains(r.LastUserText(), "meridian spawn show "+id) {
				n++
			}
		}
		return n
	}
	seen := func(id string) string { return w.spawns()[id].Seen }

	// An idle session: the delivery starts a turn, admitted at once.
	pi := startPi(t, piBin, w, piHome)
	t.Logf("pi started")
	if id := strings.TrimSpace(w.must("spawn", "-p", "CHILD TASK one", "--desc", "one")); id != "p1" {
		t.Fatalf("spawn: %q", id)
	}
	if err := testkit.WaitFor(60*time.Second, func() error {
		if got, n := seen("p1"), deliveredTo("p1"); got != "receipt" || n == 0 {
			return fmt.Errorf("p1 seen %q, delivered %d times", got, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("p1 delivered and receipted")

	// A busy session: the delivery waits behind the turn; Pi dies first.
	pi.send(map[string]any{"type": "prompt", "message": "HOLD THIS TURN"})
	if err := testkit.WaitFor(30*time.Second, func() error {
		for _, r := range w.up.Requests() {
			if strings.Contains(r.LastUserText(), "HOLD THIS TURN") {
				return nil
			}
		}
		return fmt.Errorf("pi's turn has not reached the model")
	}); err != nil {
		t.Fatal(err)
	}
	w.must("spawn", "-p", "CHILD TASK two", "--desc", "two")
	if err := testkit.WaitFor(60*time.Second, func() error {
		if s, _ := pi.status(); !strings.Contains(s, "p2") {
			return fmt.Errorf("status %q", s)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("p2 queued behind the held turn")
	pi.kill()
	if got, n := seen("p2"), deliveredTo("p2"); got != "" || n != 0 {
		t.Fatalf("after a crash before admission: p2 seen %q, delivered %d times", got, n)
	}
	owed := w.must("spawn", "collect")
	if !strings.Contains(owed, `"ids":["p2"]`) {
		t.Fatalf("p2 is not owed after the crash: %s", owed)
	}

	// The next Pi delivers it, once, with its receipt.
	release()
	pi = startPi(t, piBin, w, piHome)
	if err := testkit.WaitFor(60*time.Second, func() error {
		if got, n := seen("p2"), deliveredTo("p2"); got != "receipt" || n == 0 {
			return fmt.Errorf("p2 seen %q, delivered %d times", got, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p1", "p2"} {
		if n := deliveredTo(id); n != 1 {
			t.Fatalf("%s reached the model %d times", id, n)
		}
	}
	if s, ok := pi.status(); ok && s != "" {
		t.Fatalf("status after the receipt: %q", s)
	}
	pi.kill()
}
