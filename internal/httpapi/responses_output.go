package httpapi

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/responses"
)

// logOutput receives a background response: its events go to the event
// log, one frame each, where followers read them. It implements
// gateway.Output.
type logOutput struct {
	mu   sync.Mutex // Final and status are read by pollers
	enc  *responsesSSE
	log  *responses.EventLog
	buf  []byte
	live string // queued, then in_progress once the run begins
	// began: the model's answer started; until then a refused run may
	// move to another profile.
	began bool
	// ended records the final response before its last event is logged,
	// so a follower that continues it at once finds it finished.
	ended func(openai.Response)
}

func newLogOutput(meta openai.ResponseMeta, ended func(openai.Response)) *logOutput {
	o := &logOutput{enc: &responsesSSE{enc: openai.NewResponseEncoder(meta)}, live: openai.StatusQueued, ended: ended}
	o.enc.ended = func() { o.ended(*o.enc.enc.Final()) }
	return o
}

// attach starts writing to the job's log, with the queued response first.
func (o *logOutput) attach(log *responses.EventLog) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.log = log
	o.append(o.enc.enc.Queued(nil))
}

// begin marks the run begun: the response is in progress from now, and
// the returned object says so.
func (o *logOutput) begin() openai.Response {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.live = openai.StatusInProgress
	o.append(o.enc.enc.InProgress(nil))
	return o.enc.enc.Current(o.live)
}

// append hands complete frames to the log; each ends in a blank line,
// which no JSON string holds unescaped.
func (o *logOutput) append(frames []byte) {
	var out [][]byte
	for len(frames) > 0 {
		i := bytes.Index(frames, []byte("\n\n"))
		if i < 0 {
			break
		}
		out = append(out, bytes.Clone(frames[:i+2]))
		frames = frames[i+2:]
	}
	o.log.Append(out...)
}

func (o *logOutput) do(f func(dst []byte) []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = f(o.buf[:0])
	o.append(o.buf)
	return nil
}

func (o *logOutput) Start(st gateway.Start) error {
	return o.do(func(dst []byte) []byte {
		o.began = true
		return o.enc.start(dst, st)
	})
}

// Committed: the queued and in_progress events say nothing of who
// answers, so a run is committed only once the model's answer began.
func (o *logOutput) Committed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.began
}

func (o *logOutput) BlockStart(index int, block json.RawMessage) error {
	return o.do(func(dst []byte) []byte { return o.enc.blockStart(dst, index, block) })
}

func (o *logOutput) BlockDelta(index int, delta json.RawMessage) error {
	return o.do(func(dst []byte) []byte { return o.enc.blockDelta(dst, index, delta) })
}

func (o *logOutput) BlockStop(index int) error {
	return o.do(func(dst []byte) []byte { return o.enc.blockStop(dst, index) })
}

func (o *logOutput) Flush() error { return nil }
func (o *logOutput) Abandon(int)  {}

func (o *logOutput) Finish(f gateway.Finish) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	out, err := o.enc.finish(o.buf[:0], f)
	if err != nil {
		return err
	}
	o.append(out)
	return nil
}

// end finishes the response whatever happened: failed with the error, or
// cancelled; one that finished keeps its end. It returns the final object.
func (o *logOutput) end(err error, cancelled bool) openai.Response {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.enc.enc.Final() == nil {
		var frames []byte
		if cancelled {
			frames = o.enc.enc.Cancelled(nil)
		} else {
			frames = o.enc.fail(nil, asGatewayError(err))
		}
		o.ended(*o.enc.enc.Final())
		o.append(frames)
	}
	return *o.enc.enc.Final()
}

// current is the response object as it stands while it runs.
func (o *logOutput) current() json.RawMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	body, _ := json.Marshal(o.enc.enc.Current(o.live))
	return body
}
