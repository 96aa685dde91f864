// Package keeper runs the gateway the desktop companion shows, or
// attaches to one already running. It owns a child `meridian serve` only
// when nothing listens on the gateway's address: it checks the binary's
// version first, restarts the child after a crash (a bounded number of
// times in a window, then gives up and says so), and drains it on quit.
// A gateway that answers already belongs to another supervisor (the
// user service, a container, another user): the keeper never starts,
// stops or replaces it.
package keeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/probe"
)

// Mode is how the keeper holds the gateway.
type Mode string

// Modes.
const (
	Owned     Mode = "owned"     // its child serves
	Attached  Mode = "attached"  // another supervisor's gateway serves
	Exhausted Mode = "exhausted" // the child crashed past the bound; not restarted
	Stopped   Mode = "stopped"   // closed
)

// Kinds of events.
const (
	EventStarted   = "started"
	EventAttached  = "attached"
	EventCrashed   = "crashed"
	EventRestarted = "restarted"
	EventExhausted = "exhausted"
	EventStopped   = "stopped"
)

// Event is what the keeper tells the companion.
type Event struct {
	Kind string
	PID  int
	// Detail says why: a crash's exit status.
	Detail string
	At     time.Time
}

// Config is the gateway the keeper keeps.
type Config struct {
	// Addr is the gateway's host:port, the one serve is given.
	Addr string
	// Binary is meridian; Args more flags for serve; Env its environment.
	Binary string
	Args   []string
	Env    []string
	// Version, when set, is the version the binary must report.
	Version string
	// Restarts within Window (defaults 3 in 10 minutes).
	Restarts int
	Window   time.Duration
	// Ready bounds a start until the gateway answers (default 30 s);
	// Drain the wait for a drained child to exit (default 2 minutes).
	Ready, Drain time.Duration
	// Output takes the child's stdout and stderr (nil: discarded).
	Output io.Writer
	Log    *slog.Logger
	// Notify hears every event, from the keeper's own goroutine.
	Notify func(Event)
}

// Keeper holds the gateway.
type Keeper struct {
	cfg      Config
	restarts restarts
	// health asks a child that may be gone the next moment: no
	// connection is kept for the next child on the same address.
	health *http.Client
	quit   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	mode Mode
	cmd  *exec.Cmd
	exit chan error // the running child's Wait
}

// Start attaches to the gateway on cfg.Addr, or starts one as a child
// when nothing listens there.
func Start(ctx context.Context, cfg Config) (*Keeper, error) {
	if cfg.Restarts <= 0 {
		cfg.Restarts = 3
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.Ready <= 0 {
		cfg.Ready = 30 * time.Second
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 2 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Notify == nil {
		cfg.Notify = func(Event) {}
	}
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	k := &Keeper{cfg: cfg, restarts: restarts{max: cfg.Restarts, window: cfg.Window}, quit: make(chan struct{}), done: make(chan struct{}),
		health: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}}
	rep, err := probe.Probe(ctx, k.url(), "")
	switch {
	case err == nil && rep.Meridian:
		k.mode = Attached
		close(k.done)
		cfg.Notify(Event{Kind: EventAttached, PID: rep.PID, At: time.Now()})
		return k, nil
	case err == nil:
		return nil, fmt.Errorf("%s is held by something that is not Meridian (%s): stop it, or give the companion another address", cfg.Addr, rep.Holder)
	case !errors.Is(err, probe.ErrNothing):
		return nil, fmt.Errorf("ask %s: %w", cfg.Addr, err)
	}
	if err := k.checkVersion(ctx); err != nil {
		return nil, err
	}
	if err := k.spawn(ctx); err != nil {
		return nil, err
	}
	k.mode = Owned
	cfg.Log.Info("desktop: started the gateway", "pid", k.pid(), "addr", cfg.Addr)
	cfg.Notify(Event{Kind: EventStarted, PID: k.pid(), At: time.Now()})
	go k.watch()
	return k, nil
}

func (k *Keeper) url() string { return "http://" + k.cfg.Addr }

// checkVersion runs `meridian version`: a binary that does not run, or
// is not the version the companion was built for, is not started.
func (k *Keeper) checkVersion(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.cfg.Binary, "version")
	cmd.Env = k.cfg.Env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s version: %w", k.cfg.Binary, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "meridian" {
		return fmt.Errorf("%s is not meridian: its version says %q", k.cfg.Binary, strings.TrimSpace(string(out)))
	}
	if k.cfg.Version != "" && fields[1] != k.cfg.Version {
		return fmt.Errorf("%s is meridian %s; this companion needs %s", k.cfg.Binary, fields[1], k.cfg.Version)
	}
	return nil
}

// spawn starts the child and waits until it answers.
func (k *Keeper) spawn(ctx context.Context) error {
	host, port, err := net.SplitHostPort(k.cfg.Addr)
	if err != nil {
		return fmt.Errorf("the gateway's address %q: %w", k.cfg.Addr, err)
	}
	args := append([]string{"serve", "--host", host, "--port", port}, k.cfg.Args...)
	cmd := exec.Command(k.cfg.Binary, args...)
	cmd.Env = k.cfg.Env
	cmd.Stdout, cmd.Stderr = k.cfg.Output, k.cfg.Output
	// Its own group: a terminal's interrupt to the companion does not
	// reach it; the keeper drains it.
	procgroup.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start meridian: %w", err)
	}
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	k.mu.Lock()
	k.cmd, k.exit = cmd, exit
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, k.cfg.Ready)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if k.answers(ctx) {
			return nil
		}
		select {
		case err := <-exit:
			exit <- err // the watch reads it too
			return fmt.Errorf("meridian exited before it served: %v", err)
		case <-ctx.Done():
			_ = procgroup.SignalGroup(cmd.Process.Pid, syscall.SIGKILL)
			return fmt.Errorf("meridian did not answer on %s within %s", k.cfg.Addr, k.cfg.Ready)
		case <-tick.C:
		}
	}
}

// answers reports whether the gateway answers its health check.
func (k *Keeper) answers(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url()+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := k.health.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable
}

func (k *Keeper) pid() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil || k.cmd.Process == nil {
		return 0
	}
	return k.cmd.Process.Pid
}

// Mode is how the gateway is held now.
func (k *Keeper) Mode() Mode {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.mode
}

// PID is the owned child's pid (0: none).
func (k *Keeper) PID() int { return k.pid() }

// watch restarts the child after each crash, within the bound.
func (k *Keeper) watch() {
	defer close(k.done)
	for {
		k.mu.Lock()
		exit, pid := k.exit, k.cmd.Process.Pid
		k.mu.Unlock()
		var err error
		select {
		case err = <-exit:
		case <-k.quit:
			k.drain(exit)
			return
		}
		detail := "exited"
		if err != nil {
			detail = err.Error()
		}
		now := time.Now()
		k.cfg.Log.Warn("desktop: the gateway it runs exited", "pid", pid, "status", detail)
		k.cfg.Notify(Event{Kind: EventCrashed, PID: pid, Detail: detail, At: now})
		if !k.restarts.allow(now) {
			k.set(Exhausted)
			k.cfg.Notify(Event{Kind: EventExhausted, PID: pid, Detail: fmt.Sprintf("it crashed %d times within %s", k.cfg.Restarts+1, k.cfg.Window), At: now})
			<-k.quit
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-k.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		err = k.spawn(ctx)
		cancel()
		if err != nil {
			k.cfg.Log.Warn("desktop: the gateway could not be restarted", "err", err)
			k.set(Exhausted)
			k.cfg.Notify(Event{Kind: EventExhausted, Detail: err.Error(), At: time.Now()})
			k.reap()
			<-k.quit
			return
		}
		k.cfg.Log.Info("desktop: the gateway was restarted", "pid", k.pid())
		k.cfg.Notify(Event{Kind: EventRestarted, PID: k.pid(), At: time.Now()})
	}
}

// reap joins a child that failed to start.
func (k *Keeper) reap() {
	k.mu.Lock()
	exit := k.exit
	k.mu.Unlock()
	<-exit
}

func (k *Keeper) set(m Mode) {
	k.mu.Lock()
	k.mode = m
	k.mu.Unlock()
}

// drain asks the child to drain (SIGTERM: running turns finish), waits for
// it, and kills its group past the bound.
func (k *Keeper) drain(exit chan error) {
	pid := k.pid()
	_ = procgroup.Signal(pid, syscall.SIGTERM)
	select {
	case <-exit:
	case <-time.After(k.cfg.Drain):
		k.cfg.Log.Warn("desktop: the gateway did not drain in time; killing it", "pid", pid, "after", k.cfg.Drain)
		_ = procgroup.SignalGroup(pid, syscall.SIGKILL)
		<-exit
	}
}

// Close drains and joins an owned child; an attached gateway is left as
// it runs.
func (k *Keeper) Close() {
	select {
	case <-k.quit:
	default:
		close(k.quit)
	}
	<-k.done
	if k.Mode() != Attached {
		k.set(Stopped)
	}
	k.cfg.Notify(Event{Kind: EventStopped, At: time.Now()})
}
