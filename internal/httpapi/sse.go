package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/gateway"
)

// streamWriteTimeout bounds one write of a stream: a client that stops
// reading but keeps its connection open must not hold a claude process.
const streamWriteTimeout = time.Minute

// sseEncoder renders one protocol's events into SSE frames. Calls come
// under the writer's lock, in the order the gateway makes them, so an
// encoder may keep state.
type sseEncoder interface {
	// start opens the response; later calls are no-ops.
	start(dst []byte, st gateway.Start) []byte
	blockStart(dst []byte, index int, block json.RawMessage) []byte
	blockDelta(dst []byte, index int, delta json.RawMessage) []byte
	blockStop(dst []byte, index int) []byte
	// finish ends a successful response. An error, an answer the protocol
	// refuses, leaves the stream open for the writer's error frame.
	finish(dst []byte, f gateway.Finish) ([]byte, error)
	// ping keeps a quiet stream alive.
	ping(dst []byte) []byte
	// fail ends a stream that failed after it began.
	fail(dst []byte, e *gateway.Error) []byte
}

// sseWriter is the transport of a streamed response, whatever its
// protocol: it commits the headers lazily (with the response's start, or
// the first ping when the model is slow to begin), renders frames into a
// buffer and writes them when the backend has no more output at hand, pings
// quiet streams, bounds every write by a deadline, and remembers the first
// failed write (the client is gone). It implements gateway.Output.
type sseWriter struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	rc        *http.ResponseController
	enc       sseEncoder
	buf       []byte
	session   string // the backend session, named before the response starts
	committed bool
	done      bool  // the response ended, successfully or with an error frame
	werr      error // the first failed write

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func newSSEWriter(w http.ResponseWriter, enc sseEncoder, ping time.Duration) *sseWriter {
	o := &sseWriter{w: w, rc: http.NewResponseController(w), enc: enc, stop: make(chan struct{})}
	o.wg.Go(func() { o.pinger(ping) })
	return o
}

// stopPings stops the pinger and waits for it, so that nothing else writes
// to the response afterwards. It may be called more than once.
func (o *sseWriter) stopPings() {
	o.stopOnce.Do(func() { close(o.stop) })
	o.wg.Wait()
}

func (o *sseWriter) pinger(every time.Duration) {
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
			o.commit("")
			o.buf = o.enc.ping(o.buf)
			_ = o.flush()
		}
		o.mu.Unlock()
	}
}

// NameSession records the session's id for the headers, should a ping
// commit them before the response starts.
func (o *sseWriter) NameSession(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.session = id
}

// commit writes the headers once. Callers hold mu.
func (o *sseWriter) commit(session string) {
	if o.committed {
		return
	}
	if session == "" {
		session = o.session
	}
	h := o.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if session != "" {
		h.Set(headerSession, session)
	}
	o.w.WriteHeader(http.StatusOK)
	o.committed = true
}

// flush writes the buffered frames. Callers hold mu.
func (o *sseWriter) flush() error {
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

// Committed says whether anything was sent, a ping included.
func (o *sseWriter) Committed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.committed
}

func (o *sseWriter) Start(st gateway.Start) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commit(st.SessionID)
	o.buf = o.enc.start(o.buf, st)
	return o.werr
}

func (o *sseWriter) BlockStart(index int, block json.RawMessage) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = o.enc.blockStart(o.buf, index, block)
	return o.werr
}

func (o *sseWriter) BlockDelta(index int, delta json.RawMessage) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = o.enc.blockDelta(o.buf, index, delta)
	return o.werr
}

func (o *sseWriter) BlockStop(index int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = o.enc.blockStop(o.buf, index)
	return o.werr
}

func (o *sseWriter) Flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flush()
}

// Abandon is a no-op: what was streamed stays streamed.
func (o *sseWriter) Abandon(int) {}

func (o *sseWriter) Finish(f gateway.Finish) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	buf, err := o.enc.finish(o.buf, f)
	if err != nil {
		return err
	}
	o.buf = buf
	o.done = true
	if f.Unsaved != "" {
		o.w.Header().Set(http.TrailerPrefix+headerUnsaved, f.Unsaved)
	}
	if f.NativeWork != "" {
		o.w.Header().Set(http.TrailerPrefix+headerNativeWork, f.NativeWork)
	}
	// The answer is complete, and saved for its retries, before its last
	// frames go out; even if their write fails.
	answered(o.w, f.Content, o.buf)
	return o.flush()
}

// writeFrames writes frames rendered elsewhere (a background response's
// recorded events) at once, committing the headers first.
func (o *sseWriter) writeFrames(frames [][]byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commit("")
	for _, f := range frames {
		o.buf = append(o.buf, f...)
	}
	return o.flush()
}

// fail ends a committed stream with an error frame and reports true; an
// uncommitted one is left to the caller to answer with a status.
func (o *sseWriter) fail(err error) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.committed {
		return false
	}
	if o.done || o.werr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	o.buf = o.enc.fail(o.buf, asGatewayError(err))
	o.done = true
	_ = o.flush()
	return true
}
