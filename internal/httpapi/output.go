package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// streamWriteTimeout bounds one write of a stream: a client that stops
// reading but keeps its connection open must not hold a claude process.
const streamWriteTimeout = time.Minute

// streamOutput renders a response as Anthropic SSE. It commits the headers
// lazily: on the first model output, or on the first ping when the model is
// slow to start.
type streamOutput struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       []byte
	start     gateway.Start
	committed bool
	done      bool  // message_stop or an error event was written
	werr      error // the first failed write: the client is gone

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func newStreamOutput(w http.ResponseWriter, start gateway.Start, ping time.Duration) *streamOutput {
	o := &streamOutput{w: w, rc: http.NewResponseController(w), start: start, stop: make(chan struct{})}
	o.wg.Go(func() { o.pinger(ping) })
	return o
}

// stopPings stops the pinger and waits for it, so that nothing else writes
// to the response afterwards. It may be called more than once.
func (o *streamOutput) stopPings() {
	o.stopOnce.Do(func() { close(o.stop) })
	o.wg.Wait()
}

func (o *streamOutput) pinger(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		o.mu.Lock()
		if !o.done && o.werr == nil {
			if !o.committed {
				o.commit(o.start)
			}
			o.buf = anthropic.AppendPing(o.buf)
			o.flush()
		}
		o.mu.Unlock()
	}
}

// commit writes the headers and message_start. Callers hold mu.
func (o *streamOutput) commit(st gateway.Start) {
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if st.SessionID != "" {
		h.Set(headerSession, st.SessionID)
	}
	o.w.WriteHeader(http.StatusOK)
	o.committed = true
	o.buf = anthropic.AppendMessageStart(o.buf, st.ID, st.Model, st.Usage)
}

// flush writes the buffered frames. Callers hold mu.
func (o *streamOutput) flush() error {
	if o.werr != nil {
		return o.werr
	}
	if len(o.buf) > 0 {
		_ = o.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := o.w.Write(o.buf); err != nil {
			o.werr = err
			return err
		}
		o.buf = o.buf[:0]
	}
	if err := o.rc.Flush(); err != nil {
		o.werr = err
	}
	_ = o.rc.SetWriteDeadline(time.Time{})
	return o.werr
}

// Start and the block calls render into the buffer; Flush (on the
// backend's hint), Finish, an error and pings write it out.

func (o *streamOutput) Start(st gateway.Start) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.committed {
		o.commit(st)
	}
	return o.werr
}

func (o *streamOutput) BlockStart(index int, block json.RawMessage) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = anthropic.AppendBlockStart(o.buf, index, block)
	return o.werr
}

func (o *streamOutput) BlockDelta(index int, delta json.RawMessage) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = anthropic.AppendBlockDelta(o.buf, index, delta)
	return o.werr
}

func (o *streamOutput) BlockStop(index int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = anthropic.AppendBlockStop(o.buf, index)
	return o.werr
}

func (o *streamOutput) Flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flush()
}

// Abandon is a no-op: what was streamed stays streamed.
func (o *streamOutput) Abandon(int) {}

func (o *streamOutput) Finish(f gateway.Finish) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = anthropic.AppendMessageDelta(o.buf, f.StopReason, f.StopSequence, f.Usage)
	o.buf = anthropic.AppendMessageStop(o.buf)
	o.done = true
	return o.flush()
}

// fail ends a committed stream with an error event and reports true; an
// uncommitted one is left to the caller to answer with a status.
func (o *streamOutput) fail(err error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.committed {
		return false
	}
	if o.done || o.werr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ge *gateway.Error
	if !errors.As(err, &ge) {
		ge = &gateway.Error{Status: http.StatusInternalServerError, Type: anthropic.ErrAPI, Message: err.Error()}
	}
	o.buf = anthropic.AppendErrorEvent(o.buf, ge.Type, ge.Message, ge.RetryAfterSeconds())
	o.done = true
	_ = o.flush()
	return true
}

// messageOutput collects a response for one JSON message: the gateway
// hands over the whole answer when it finishes.
type messageOutput struct {
	start   gateway.Start
	finish  gateway.Finish
	session string
}

func newMessageOutput() *messageOutput { return &messageOutput{} }

func (o *messageOutput) Start(st gateway.Start) error {
	o.start = st
	o.session = st.SessionID
	return nil
}

func (o *messageOutput) BlockStart(int, json.RawMessage) error { return nil }
func (o *messageOutput) BlockDelta(int, json.RawMessage) error { return nil }
func (o *messageOutput) BlockStop(int) error                   { return nil }
func (o *messageOutput) Flush() error                          { return nil }
func (o *messageOutput) Abandon(int)                           {}

func (o *messageOutput) Finish(f gateway.Finish) error {
	o.finish = f
	if f.SessionID != "" {
		o.session = f.SessionID
	}
	return nil
}

func (o *messageOutput) response() anthropic.Response {
	resp := anthropic.Response{
		ID:         o.start.ID,
		Type:       "message",
		Role:       anthropic.RoleAssistant,
		Model:      o.start.Model,
		Content:    o.finish.Content,
		StopReason: o.finish.StopReason,
		Usage:      o.finish.Usage,
	}
	if resp.Content == nil {
		resp.Content = []json.RawMessage{}
	}
	if o.finish.StopSequence != "" {
		seq := o.finish.StopSequence
		resp.StopSequence = &seq
	}
	return resp
}
