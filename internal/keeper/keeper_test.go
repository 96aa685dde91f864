package keeper

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// meridianBin is the binary the keeper runs, built once.
var meridianBin string

func TestMain(m *testing.M) { os.Exit(testkit.RunWithMeridian(m, &meridianBin)) }

// events records what a keeper tells.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		out = append(out, ev.Kind)
	}
	return out
}

func config(t *testing.T, bin string, ev *events) Config {
	home := t.TempDir()
	return Config{Addr: testkit.FreeAddr(t), Binary: bin, Args: []string{"--data-dir", t.TempDir(), "--spares", "0"},
		Env: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, Notify: ev.add, Window: time.Hour, Output: testWriter{t}}
}

// testWriter logs the children's output with the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// An owned child killed with SIGKILL comes back on the same address with
// a new pid, three times; the fourth crash exhausts recovery: no more
// restarts. Close then joins everything.
func TestOwnedChildIsRestartedThreeTimes(t *testing.T) {
	t.Parallel()
	ev := &events{}
	k, err := Start(context.Background(), config(t, meridianBin, ev))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Mode() != Owned {
		t.Fatalf("mode %s", k.Mode())
	}
	seen := map[int]bool{}
	for i := range 4 {
		pid := k.PID()
		if seen[pid] || !testkit.Alive(pid) {
			t.Fatalf("crash %d: pid %d (seen before: %v)", i+1, pid, seen[pid])
		}
		seen[pid] = true
		testkit.Kill(pid)
		want := EventRestarted
		if i == 3 {
			want = EventExhausted
		}
		if err := testkit.WaitFor(30*time.Second, func() error {
			if k := ev.kinds(); len(k) != 1+2*(i+1) || k[len(k)-1] != want {
				return errNotYet
			}
			return nil
		}); err != nil {
			t.Fatalf("crash %d: events %v", i+1, ev.kinds())
		}
		if want == EventRestarted {
			if !k.answers(context.Background()) {
				t.Fatalf("after restart %d the address does not answer", i+1)
			}
		}
	}
	time.Sleep(time.Second) // no fifth start
	if k.Mode() != Exhausted || strings.Join(ev.kinds(), ",") != "started,crashed,restarted,crashed,restarted,crashed,restarted,crashed,exhausted" {
		t.Fatalf("mode %s events %v", k.Mode(), ev.kinds())
	}
	if _, err := net.DialTimeout("tcp", k.cfg.Addr, time.Second); err == nil {
		t.Fatal("something still serves after recovery was exhausted")
	}
}

var errNotYet = errors.New("not yet")

// Quit drains an owned child: it exits, and nothing outlives Close.
func TestCloseDrainsTheOwnedChild(t *testing.T) {
	t.Parallel()
	ev := &events{}
	k, err := Start(context.Background(), config(t, meridianBin, ev))
	if err != nil {
		t.Fatal(err)
	}
	pid := k.PID()
	k.Close()
	if testkit.Alive(pid) || k.Mode() != Stopped {
		t.Fatalf("after Close: pid %d alive %v, mode %s", pid, testkit.Alive(pid), k.Mode())
	}
	if got := strings.Join(ev.kinds(), ","); got != "started,stopped" {
		t.Fatalf("events %s", got)
	}
}

// A gateway already serving (under another supervisor) is attached to:
// no second one starts, and Close leaves it running.
func TestAttachesToARunningGateway(t *testing.T) {
	t.Parallel()
	bin := meridianBin
	other, addr, _ := testkit.ServeMeridian(t, bin)
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	ev := &events{}
	cfg := config(t, bin, ev)
	cfg.Addr = addr
	k, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if k.Mode() != Attached || k.PID() != 0 {
		t.Fatalf("mode %s pid %d", k.Mode(), k.PID())
	}
	k.Close()
	if !testkit.Alive(other.Process.Pid) || k.Mode() != Attached {
		t.Fatal("closing an attached keeper stopped the gateway")
	}
	if got := strings.Join(ev.kinds(), ","); got != "attached,stopped" {
		t.Fatalf("events %s", got)
	}
}

// What is not Meridian on the address, and a binary of another version,
// are refused before anything starts.
func TestRefusals(t *testing.T) {
	t.Parallel()
	bin := meridianBin
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	cfg := config(t, bin, &events{})
	cfg.Addr = strings.TrimPrefix(other.URL, "http://")
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "not Meridian") {
		t.Fatalf("a foreign server: %v", err)
	}
	cfg = config(t, bin, &events{})
	cfg.Version = "9.9.9"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "needs 9.9.9") {
		t.Fatalf("another version: %v", err)
	}
	cfg.Version, cfg.Binary = "", "/bin/true"
	if _, err := Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "is not meridian") {
		t.Fatalf("not meridian: %v", err)
	}
}

func TestRestartsWithinAWindow(t *testing.T) {
	r := restarts{max: 3, window: time.Minute}
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !r.allow(t0.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("restart %d refused", i+1)
		}
	}
	if r.allow(t0.Add(10 * time.Second)) {
		t.Fatal("a fourth crash in the window restarted")
	}
	if !r.allow(t0.Add(61 * time.Second)) {
		t.Fatal("a crash after the window refused")
	}
}
