package testkit

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/meridian-gw/meridian/internal/backend/claude"
)

var _ claude.Launcher = (*InProcessCLI)(nil)

// InProcessCLI is a claude.Launcher whose "processes" are goroutines that
// speak the CLI's stream-json protocol over in-memory pipes. It costs no
// process start, so benchmarks measure Meridian's own relay work; process
// start is measured on its own.
type InProcessCLI struct {
	turn []byte // the stdout written for each user message
}

// NewInProcessCLI answers every user message with text streamed in chunks.
func NewInProcessCLI(chunks []string) *InProcessCLI {
	var b bytes.Buffer
	for _, l := range []string{FakeInit, FakeMessageStart, FakeTextStart} {
		b.WriteString(l + "\n")
	}
	for _, c := range chunks {
		b.WriteString(FakeTextDelta(c) + "\n")
	}
	for _, l := range []string{FakeTextStop, FakeMessageDelta, FakeMessageStop, FakeResult} {
		b.WriteString(l + "\n")
	}
	return &InProcessCLI{turn: b.Bytes()}
}

// TurnBytes is what one turn writes to stdout.
func (c *InProcessCLI) TurnBytes() []byte { return c.turn }

// Launch implements claude.Launcher.
func (c *InProcessCLI) Launch(claude.Spec) (claude.Proc, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	_ = errW.Close()
	p := &inProc{stdin: inW, stdout: outR, stderr: errR, inR: inR, outW: outW, done: make(chan struct{})}
	go p.run(c.turn)
	return p, nil
}

type inProc struct {
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	stderr *io.PipeReader
	inR    *io.PipeReader
	outW   *io.PipeWriter
	done   chan struct{}
	once   sync.Once
}

func (p *inProc) run(turn []byte) {
	defer close(p.done)
	defer p.outW.Close()
	r := bufio.NewReader(p.inR)
	for {
		l, err := r.ReadString('\n')
		if strings.Contains(l, `"type":"user"`) {
			if _, werr := p.outW.Write(turn); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *inProc) Stdin() io.WriteCloser { return p.stdin }
func (p *inProc) Stdout() io.ReadCloser { return p.stdout }
func (p *inProc) Stderr() io.ReadCloser { return p.stderr }
func (p *inProc) Pid() int              { return 0 }

// Signal ends the stand-in as a kill would: its pipes break.
func (p *inProc) Signal(syscall.Signal) error {
	p.once.Do(func() {
		_ = p.inR.CloseWithError(io.ErrClosedPipe)
		_ = p.outW.CloseWithError(io.ErrClosedPipe)
	})
	return nil
}

func (p *inProc) Wait() error {
	<-p.done
	return nil
}
