// Package subproc owns a backend CLI's process lifecycle, once for every
// driver: it starts the CLI in its own process group with pipes of its
// own, reads stdout line by line under a bound and keeps stderr drained
// (its tail kept for reports), lets a context end a blocked stdin write,
// records the exit once, and closes in stages (stdin, SIGTERM, SIGKILL to
// the group) that always join the process and its readers. Both CLI
// drivers run their processes through it.
package subproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/meridian-gw/meridian/internal/procgroup"
)

// Spec is what a Launcher starts.
type Spec struct {
	Path string
	Args []string
	Env  []string
	Dir  string
	// Inherit are files the process gets beside stdio (from fd 3): a
	// session folder's lock, held while the process tree lives.
	Inherit []*os.File
}

// Proc is a started CLI process as a driver sees it.
type Proc interface {
	Stdin() io.WriteCloser
	Stdout() io.ReadCloser
	Stderr() io.ReadCloser
	Pid() int
	// Signal signals the process and everything it started.
	Signal(sig syscall.Signal) error
	// Wait blocks until the process exits. Called exactly once.
	Wait() error
}

// Launcher starts CLI processes. ExecLauncher runs real binaries; tests and
// benchmarks may substitute an in-process stand-in speaking the same
// protocol over pipes.
type Launcher interface {
	Launch(Spec) (Proc, error)
}

// ExecLauncher runs the binary in a group of its own (a process group, on
// Windows a job object), so that the whole tree it starts can be
// signalled at once.
type ExecLauncher struct{}

// Launch implements Launcher.
func (ExecLauncher) Launch(s Spec) (Proc, error) {
	// os.Pipe rather than exec's pipe helpers: the files are ours to read
	// until EOF and to close on our own schedule, independent of Wait.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	cmd.Dir = s.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.ExtraFiles = s.Inherit
	// What the CLI itself starts stays in its group, which Signal reaches.
	procgroup.Prepare(cmd)
	procgroup.DieWithParent(cmd, syscall.SIGKILL)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	// The child holds its own copies; ours would keep EOF from arriving.
	closeAll(inR, outW, errW)
	group, err := procgroup.Attach(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll(inW, outR, errR)
		return nil, err
	}
	return &execProc{cmd: cmd, group: group, stdin: inW, stdout: outR, stderr: errR}, nil
}

type execProc struct {
	cmd    *exec.Cmd
	group  *procgroup.Group
	stdin  *os.File
	stdout *os.File
	stderr *os.File
}

func (p *execProc) Stdin() io.WriteCloser { return p.stdin }
func (p *execProc) Stdout() io.ReadCloser { return p.stdout }
func (p *execProc) Stderr() io.ReadCloser { return p.stderr }
func (p *execProc) Pid() int              { return p.cmd.Process.Pid }

func (p *execProc) Signal(sig syscall.Signal) error { return p.group.Signal(sig) }

func (p *execProc) Wait() error {
	err := p.cmd.Wait()
	p.group.Release()
	return err
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Run runs a short command to its end and returns its stdout (the first
// MiB) and stderr (the first 64 KiB). Its group is killed when ctx ends,
// and once it exited (whatever it left behind); it is always joined. A
// command killed by ctx reports ctx's error.
func Run(ctx context.Context, l Launcher, s Spec) (stdout, stderr []byte, err error) {
	return exchange(ctx, l, s, nil, 1<<20, false)
}

// ErrOutputTooLarge is the error of an Exchange whose command wrote more
// than its bound: it was killed then, not waited for.
var ErrOutputTooLarge = errors.New("its output went past its bound")

// Exchange runs a short command that reads in on its stdin and answers on
// its stdout, as Run does, except that stdout past max bytes kills the
// command's group at once and reports ErrOutputTooLarge: a filter's
// answer is whole or it is nothing.
func Exchange(ctx context.Context, l Launcher, s Spec, in []byte, max int) (stdout, stderr []byte, err error) {
	return exchange(ctx, l, s, in, max, true)
}

func exchange(ctx context.Context, l Launcher, s Spec, in []byte, max int, strict bool) (stdout, stderr []byte, err error) {
	proc, err := l.Launch(s)
	if err != nil {
		return nil, nil, err
	}
	kill := func() { _ = proc.Signal(syscall.SIGKILL) }
	stop := context.AfterFunc(ctx, kill)
	// A command that stops reading its input (it exited, or answers
	// first) fails the write; its answer says what happened.
	written := make(chan struct{})
	go func() {
		defer close(written)
		if len(in) > 0 {
			_, _ = proc.Stdin().Write(in)
		}
		_ = proc.Stdin().Close()
	}()
	errDone := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(proc.Stderr(), 64<<10))
		_, _ = io.Copy(io.Discard, proc.Stderr())
		errDone <- b
	}()
	stdout, readErr := io.ReadAll(io.LimitReader(proc.Stdout(), int64(max)+1))
	over := len(stdout) > max
	if over {
		stdout = stdout[:max]
		if strict {
			kill()
		}
	}
	_, _ = io.Copy(io.Discard, proc.Stdout())
	stderr = <-errDone
	waitErr := proc.Wait()
	stop()
	kill()
	// A write still blocked (the input's reader left the group) ends
	// when its pipe closes.
	_ = proc.Stdin().Close()
	<-written
	_ = proc.Stdout().Close()
	_ = proc.Stderr().Close()
	switch {
	case ctx.Err() != nil:
		return stdout, stderr, ctx.Err()
	case over && strict:
		return stdout, stderr, ErrOutputTooLarge
	case readErr != nil:
		return stdout, stderr, readErr
	}
	return stdout, stderr, waitErr
}
