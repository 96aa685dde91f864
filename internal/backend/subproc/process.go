package subproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
)

// Bounds of a process's output.
const (
	// DefaultMaxLine bounds one stdout line. Tool results make lines
	// large; anything beyond this is a broken stream, not a message.
	DefaultMaxLine = 64 << 20
	// MaxStderrLine bounds one stderr line as kept; the rest of a longer
	// one is drained and dropped.
	MaxStderrLine = 1 << 20
	// StderrTailBytes is how much of stderr is kept for error reports.
	StderrTailBytes = 8 << 10
)

// Defaults of a staged close.
const (
	DefaultExitGrace = 2 * time.Second
	DefaultKillGrace = 2 * time.Second
)

// Options are a process's lifecycle: how its output is read and how it
// is ended.
type Options struct {
	// Name is the CLI ("claude", "agy"), for logs and exit reports.
	Name string
	// MaxLine bounds a stdout line (0: DefaultMaxLine); a longer one is
	// dropped and logged.
	MaxLine int
	// ExitGrace is how long a process whose stdin closed may take to exit
	// before its group gets SIGTERM, and KillGrace how long after that
	// before SIGKILL.
	ExitGrace, KillGrace time.Duration
	Log                  *slog.Logger

	// Line gets each stdout line in order, without its newline, from the
	// reader's goroutine; the slice is reused after it returns. more
	// reports that further output is already buffered. StdoutEnd runs
	// after the last line. Stderr gets each stderr line (cut at
	// MaxStderrLine); its tail is kept either way.
	Line      func(line []byte, more bool)
	StdoutEnd func()
	Stderr    func(line []byte)
}

// Process is a started CLI and its lifecycle, the same for every driver:
// stdout read line by line under a bound, stderr always drained with its
// tail kept, the exit recorded once, stdin writes that a context can end,
// and a staged close that always joins the process and its readers.
type Process struct {
	proc Proc
	opts Options
	log  *slog.Logger

	writeMu sync.Mutex

	exited     chan struct{} // closed once Wait returned; waitErr is set before
	waitErr    error
	stdoutDone chan struct{}
	stderrDone chan struct{}
	tail       tailBuffer

	closeOnce sync.Once
}

// Start launches spec and watches the process.
func Start(l Launcher, spec Spec, opts Options) (*Process, error) {
	proc, err := l.Launch(spec)
	if err != nil {
		return nil, err
	}
	return Watch(proc, opts), nil
}

// Watch takes over a launched process: its readers and its wait start now.
func Watch(proc Proc, opts Options) *Process {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	if opts.ExitGrace <= 0 {
		opts.ExitGrace = DefaultExitGrace
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = "the CLI"
	}
	p := &Process{proc: proc, opts: opts, log: opts.Log,
		exited: make(chan struct{}), stdoutDone: make(chan struct{}), stderrDone: make(chan struct{})}
	go p.readStdout()
	go p.readStderr()
	go func() {
		p.waitErr = proc.Wait()
		close(p.exited)
	}()
	return p
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.proc.Pid() }

// Signal signals the process's group.
func (p *Process) Signal(sig syscall.Signal) error { return p.proc.Signal(sig) }

// Exited closes once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// StdoutDone closes after the last stdout line was handed on.
func (p *Process) StdoutDone() <-chan struct{} { return p.stdoutDone }

// Gone reports whether the process has exited.
func (p *Process) Gone() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// StderrTail is the end of what the process wrote to stderr.
func (p *Process) StderrTail() string { return p.tail.String() }

func (p *Process) readStdout() {
	defer close(p.stdoutDone)
	if p.opts.StdoutEnd != nil {
		defer p.opts.StdoutEnd()
	}
	err := readLines(p.proc.Stdout(), 16<<10, p.opts.MaxLine, func(line []byte, cut, more bool) {
		if cut {
			p.log.Error(p.opts.Name+" wrote a line beyond the size bound; dropping it", "bound", p.opts.MaxLine)
			return
		}
		if len(bytes.TrimSpace(line)) > 0 && p.opts.Line != nil {
			p.opts.Line(line, more)
		}
	})
	if err != nil && !errors.Is(err, syscall.EBADF) && !errors.Is(err, io.ErrClosedPipe) {
		p.log.Debug(p.opts.Name+" stdout closed", "err", err)
	}
}

func (p *Process) readStderr() {
	defer close(p.stderrDone)
	_ = readLines(p.proc.Stderr(), 4<<10, MaxStderrLine, func(line []byte, cut, _ bool) {
		if cut {
			p.log.Debug(p.opts.Name+" wrote a stderr line beyond the size bound; keeping its start", "bound", MaxStderrLine)
		}
		p.tail.Write(line)
		if p.opts.Stderr != nil {
			p.opts.Stderr(line)
		}
	})
}

// Write writes b to the process's stdin. When ctx ends while the write
// blocks (a process that stopped reading), stdin is closed so the write
// returns: the process can take no more input, and ctx's error is
// returned.
func (p *Process) Write(ctx context.Context, b []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = p.proc.Stdin().Close() })
	_, err := p.proc.Stdin().Write(b)
	if !stop() && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("write to %s: %w", p.opts.Name, err)
	}
	return nil
}

// ExitReport describes how the process ended, for error reports: its exit
// status and the last words of its stderr. It waits up to ExitGrace for
// the exit and for stderr to drain; a process still running is reported
// as having stopped producing output.
func (p *Process) ExitReport() string {
	if !p.wait(p.exited, p.opts.ExitGrace) {
		return p.opts.Name + " stopped producing output"
	}
	p.wait(p.stderrDone, p.opts.ExitGrace) // the last words are usually the reason
	msg := p.opts.Name + " exited"
	if p.waitErr != nil {
		msg += " (" + p.waitErr.Error() + ")"
	}
	if tail := p.tail.String(); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// Close ends the process and joins it, once: stdin is closed so the CLI
// exits on its own; if it does not within ExitGrace its group gets
// SIGTERM, then SIGKILL after KillGrace. Whatever the CLI left in its
// group is killed, and the readers are joined (a descendant outside the
// group that holds a pipe open gets its pipe closed under it). before,
// when set, runs first: what the driver must do for a clean exit (wake a
// stopped process, end a paused turn).
func (p *Process) Close(before func()) {
	p.closeOnce.Do(func() {
		if before != nil {
			before()
		}
		_ = p.proc.Stdin().Close()
		if !p.wait(p.exited, p.opts.ExitGrace) {
			p.log.Debug(p.opts.Name + " did not exit after stdin closed; terminating")
			_ = p.proc.Signal(syscall.SIGTERM)
			if !p.wait(p.exited, p.opts.KillGrace) {
				// Not a fault to report: the CLI had its stdin closed and a
				// SIGTERM, and what its turns wrote is on disk by now.
				p.log.Debug(p.opts.Name+" did not exit after SIGTERM; killing", "waited", p.opts.ExitGrace+p.opts.KillGrace)
				_ = p.proc.Signal(syscall.SIGKILL)
				<-p.exited
			}
		}
		_ = p.proc.Signal(syscall.SIGKILL)
		for _, done := range []chan struct{}{p.stdoutDone, p.stderrDone} {
			if !p.wait(done, p.opts.ExitGrace) {
				_ = p.proc.Stdout().Close()
				_ = p.proc.Stderr().Close()
				<-done
			}
		}
		_ = p.proc.Stdout().Close()
		_ = p.proc.Stderr().Close()
	})
}

// Yield lowers the process's group to the least CPU priority, for good:
// called before a Close nothing waits for, so that the CLI's clean-up as
// it exits (~0.15 s of CPU) yields to the processes still at work. A
// Close something waits for (a turn's conversation, or its subagents'
// answers) must not: on a busy machine a process at the least priority
// takes seconds to exit, even killed. Its group is its own.
func (p *Process) Yield() {
	if pid := p.proc.Pid(); pid > 0 {
		procgroup.Lower(pid)
	}
}

// Kill ends the process's group at once; Close still joins it.
func (p *Process) Kill() { _ = p.proc.Signal(syscall.SIGKILL) }

// CloseStdoutSoon closes stdout after d: a process that exited may have
// left a child holding stdout open, and what it wrote before is read
// meanwhile.
func (p *Process) CloseStdoutSoon(d time.Duration) {
	time.AfterFunc(d, func() { _ = p.proc.Stdout().Close() })
}

func (p *Process) wait(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// tailBuffer keeps the last StderrTailBytes of what was written.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > 0 {
		t.buf = append(t.buf, '\n')
	}
	t.buf = append(t.buf, b[:min(len(b), StderrTailBytes)]...)
	if over := len(t.buf) - StderrTailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
