package subproc

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
)

// pipeProc is a Proc over in-memory pipes: the test plays the CLI's side.
type pipeProc struct {
	inR, outR, errR *io.PipeReader
	inW, outW, errW *io.PipeWriter
	exit            chan error
	once            sync.Once
}

func newPipeProc() *pipeProc {
	p := &pipeProc{exit: make(chan error, 1)}
	p.inR, p.inW = io.Pipe()
	p.outR, p.outW = io.Pipe()
	p.errR, p.errW = io.Pipe()
	return p
}

func (p *pipeProc) Stdin() io.WriteCloser { return p.inW }
func (p *pipeProc) Stdout() io.ReadCloser { return p.outR }
func (p *pipeProc) Stderr() io.ReadCloser { return p.errR }
func (p *pipeProc) Pid() int              { return 0 }
func (p *pipeProc) Wait() error           { return <-p.exit }

// Signal: any signal but a stop ends the stand-in with that status.
func (p *pipeProc) Signal(sig syscall.Signal) error {
	if sig == procgroup.Freeze || sig == procgroup.Thaw {
		return nil
	}
	p.end(errors.New("signal: " + sig.String()))
	return nil
}

func (p *pipeProc) end(err error) {
	p.once.Do(func() {
		_ = p.outW.Close()
		_ = p.errW.Close()
		_ = p.inR.Close()
		p.exit <- err
	})
}

// A stderr line over the kept bound does not end the reading: the CLI
// writes 2 MiB in one line and then more, none of it blocks, and the end
// of it is in the exit report.
func TestStderrKeepsDrainingAfterALongLine(t *testing.T) {
	pp := newPipeProc()
	var seen []int
	p := Watch(pp, Options{Name: "cli", Stderr: func(line []byte) { seen = append(seen, len(line)) }})
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(pp.errW, strings.Repeat("e", 2<<20)+"\n"+strings.Repeat("f\n", 100000)+"the last words\n")
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the CLI was left blocked writing stderr after a long line")
	}
	pp.end(errors.New("exit status 3"))
	if r := p.ExitReport(); !strings.Contains(r, "cli exited (exit status 3)") || !strings.HasSuffix(r, "the last words") {
		t.Fatalf("exit report %q", r)
	}
	p.Close(nil)
	if len(seen) != 100002 || seen[0] != MaxStderrLine {
		t.Fatalf("%d stderr lines, the first %d bytes", len(seen), seen[0])
	}
}

// A write the CLI never reads ends with its context: stdin is closed under
// it, and Close still joins.
func TestWriteEndsWithItsContext(t *testing.T) {
	pp := newPipeProc()
	p := Watch(pp, Options{Name: "cli", ExitGrace: 50 * time.Millisecond, KillGrace: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Write(ctx, []byte("nobody reads this\n")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write = %v", err)
	}
	done := make(chan struct{})
	go func() { p.Close(nil); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not join")
	}
	if !p.Gone() {
		t.Fatal("closed but not gone")
	}
}

// The exit report of a process still running says so, without reading
// its exit status (which -race would catch read before it is written).
func TestExitReportOfARunningProcess(t *testing.T) {
	pp := newPipeProc()
	p := Watch(pp, Options{Name: "cli", ExitGrace: 20 * time.Millisecond, KillGrace: 20 * time.Millisecond})
	if r := p.ExitReport(); r != "cli stopped producing output" {
		t.Fatalf("report %q", r)
	}
	p.Close(nil)
}
