package forward

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/openai"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// writeTimeout bounds one write to the client: one that takes no bytes
// for that long is gone.
const writeTimeout = time.Minute

// maxPendingFrame bounds the part of a relayed frame held back until it is
// whole. A larger frame (a final response object of many megabytes) is
// written as it comes; no ping goes out in its middle, and a cut in it can
// only abort the connection.
const maxPendingFrame = 1 << 20

// maxFrameHead is how much of a frame written through is kept: enough for
// its event line.
const maxFrameHead = 256

// relayProtocol is what relaying a streamed answer needs to know of its
// API: which frame ends an answer, a ping, and the frame that ends an
// answer cut short.
type relayProtocol interface {
	// seen takes each whole frame the holder sent, in order; it reports
	// whether the answer ended with it.
	seen(frame []byte) (ended bool)
	ping(dst []byte) []byte
	// fail ends a stream the holder left unfinished; ok is false when it
	// cannot (then the connection is aborted).
	fail(dst []byte, e *gateway.Error) (out []byte, ok bool)
}

// relayProtocolFor returns the protocol of a model route's stream.
func relayProtocolFor(api string) relayProtocol {
	switch api {
	case telemetry.APIMessages:
		return messagesRelay{}
	case telemetry.APIChat:
		return chatRelay{}
	case telemetry.APIResponses:
		return &responsesRelay{}
	}
	return nil
}

// relay copies the holder's answer to the client. A stream goes out in
// whole SSE frames, so that while the holder is quiet the relay can put
// pings of its own between them, and when the holder stops in the middle
// the client gets its API's error frame rather than a stream that only
// stops. Anything else is copied as it comes.
type relay struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	proto relayProtocol // nil: not a stream
	every time.Duration // the ping interval

	// heard is when the holder last sent anything, in Unix nanoseconds (0:
	// nothing yet); the holder's watch reads it.
	heard atomic.Int64

	mu      sync.Mutex
	pending []byte    // the start of a frame not yet whole
	through bool      // a frame over maxPendingFrame is being written as it comes
	head    []byte    // that frame's start
	ended   bool      // the answer's last frame went out
	wrote   time.Time // the last write to the client
	werr    error     // the first failed write: the client is gone
}

func newRelay(w http.ResponseWriter, proto relayProtocol, every time.Duration) *relay {
	return &relay{w: w, rc: http.NewResponseController(w), proto: proto, every: every, wrote: time.Now()}
}

// silent is how long the holder has sent nothing since its answer began;
// zero before it began.
func (r *relay) silent(now time.Time) time.Duration {
	at := r.heard.Load()
	if at == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, at))
}

// errClientGone ends a relay whose client stopped taking its answer.
var errClientGone = errors.New("forward: the client is gone")

// copy relays body until it ends: nil when the holder ended it,
// errClientGone when the client went away, else the holder's read error
// (the answer was cut). A stream is pinged while the holder is quiet.
func (r *relay) copy(body io.Reader) error {
	if r.proto != nil {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { r.pinger(stop) })
		defer func() { close(stop); wg.Wait() }()
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			r.heard.Store(time.Now().UnixNano())
			if werr := r.write(buf[:n]); werr != nil {
				return errClientGone
			}
		}
		if errors.Is(err, io.EOF) {
			return r.flushPending()
		}
		if err != nil {
			return err
		}
	}
}

// write sends what arrived: a stream's whole frames, holding back the
// start of the next; anything else as it is.
func (r *relay) write(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proto == nil {
		return r.send(b)
	}
	r.pending = append(r.pending, b...)
	end := bytes.LastIndex(r.pending, []byte("\n\n"))
	if end < 0 {
		if len(r.pending) <= maxPendingFrame {
			return r.werr
		}
		// Too long to hold: written through, its start kept to learn
		// which event it is once it ends.
		if !r.through {
			r.through = true
			r.head = append(r.head[:0], r.pending[:maxFrameHead]...)
		}
		err := r.send(r.pending)
		r.pending = r.pending[:0]
		return err
	}
	end += 2
	for rest := r.pending[:end]; len(rest) > 0; {
		i := bytes.Index(rest, []byte("\n\n")) + 2
		frame := rest[:i]
		if r.through {
			r.through = false
			frame = r.head
		}
		if r.proto.seen(frame) {
			r.ended = true
		}
		rest = rest[i:]
	}
	err := r.send(r.pending[:end])
	r.pending = append(r.pending[:0], r.pending[end:]...)
	return err
}

// flushPending writes what is left when the holder ended its answer: an
// answer's end need not close its last frame.
func (r *relay) flushPending() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	err := r.send(r.pending)
	r.pending = nil
	if err != nil {
		return errClientGone
	}
	return nil
}

// send writes b and flushes. Callers hold mu.
func (r *relay) send(b []byte) error {
	if r.werr != nil {
		return r.werr
	}
	_ = r.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := r.w.Write(b); err != nil {
		r.werr = err
		return err
	}
	if err := r.rc.Flush(); err != nil {
		r.werr = err
	}
	_ = r.rc.SetWriteDeadline(time.Time{})
	r.wrote = time.Now()
	return r.werr
}

// pinger pings the client whenever nothing went to it for a ping interval:
// a holder pings its own quiet streams, so these fill in only while the
// holder itself is silent.
func (r *relay) pinger(stop <-chan struct{}) {
	t := time.NewTicker(r.every / 2)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			r.mu.Lock()
			if !r.through && !r.ended && now.Sub(r.wrote) >= r.every/2 {
				_ = r.send(r.proto.ping(nil))
			}
			r.mu.Unlock()
		}
	}
}

// cut ends an answer the holder left unfinished: with e as the API's error
// frame when the stream allows one, else by aborting the connection, so
// that the client sees a transport error and never a short answer taken
// for whole. An answer that had ended, or a client gone, needs nothing.
func (r *relay) cut(e *gateway.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.werr != nil {
		return
	}
	if r.proto != nil && !r.through {
		if frame, ok := r.proto.fail(nil, e); ok {
			r.pending = nil
			r.ended = true
			_ = r.send(frame)
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// frameEvent is a frame's event name, or for a frame without one the
// first line of its data.
func frameEvent(frame []byte) string {
	for line := range bytes.Lines(frame) {
		line = bytes.TrimRight(line, "\n")
		if name, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			return string(bytes.TrimSpace(name))
		}
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			return string(bytes.TrimSpace(data))
		}
	}
	return ""
}

// frameData is the data of a frame of one data line.
func frameData(frame []byte) []byte {
	for line := range bytes.Lines(frame) {
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\n"), []byte("data:")); ok {
			return bytes.TrimSpace(data)
		}
	}
	return nil
}

// messagesRelay: an answer ends with message_stop or an error event.
type messagesRelay struct{}

func (messagesRelay) seen(frame []byte) bool {
	switch frameEvent(frame) {
	case "message_stop", "error":
		return true
	}
	return false
}

func (messagesRelay) ping(dst []byte) []byte { return anthropic.AppendPing(dst) }

func (messagesRelay) fail(dst []byte, e *gateway.Error) ([]byte, bool) {
	return anthropic.AppendErrorEvent(dst, e.Type, e.Message, e.RetryAfterSeconds()), true
}

// chatRelay: an answer, or an error chunk, ends with [DONE].
type chatRelay struct{}

func (chatRelay) seen(frame []byte) bool { return frameEvent(frame) == "[DONE]" }

func (chatRelay) ping(dst []byte) []byte { return openai.AppendPing(dst) }

func (chatRelay) fail(dst []byte, e *gateway.Error) ([]byte, bool) {
	return openai.AppendErrorChunk(dst, e.Status, e.Message, e.RetryAfterSeconds()), true
}

// responsesRelay: an answer ends with response.completed, incomplete or
// failed. Its response.failed needs the response as its first events
// described it and the next sequence number, so both are kept.
type responsesRelay struct {
	snapshot json.RawMessage
	next     int // the sequence number the next event gets
}

func (p *responsesRelay) seen(frame []byte) bool {
	event := frameEvent(frame)
	switch event {
	case "", "ping":
		return false // a comment (a ping) carries no event
	case "response.created", "response.in_progress", "response.queued":
		var ev struct {
			Seq      int             `json:"sequence_number"`
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(frameData(frame), &ev) == nil {
			p.snapshot, p.next = ev.Response, ev.Seq
		}
	}
	p.next++
	switch event {
	case "response.completed", "response.incomplete", "response.failed", "error":
		return true
	}
	return false
}

func (p *responsesRelay) ping(dst []byte) []byte { return openai.AppendPing(dst) }

func (p *responsesRelay) fail(dst []byte, e *gateway.Error) ([]byte, bool) {
	if p.snapshot == nil {
		// Nothing named the response yet: the API's error event.
		return openai.AppendStreamError(dst, p.next, e.Status, e.Message, e.RetryAfterSeconds()), true
	}
	out, err := openai.AppendFailedAfter(dst, p.snapshot, p.next, e.Status, e.Message, e.RetryAfterSeconds())
	return out, err == nil
}

// StallError is what the client of a forward hears when the host
// answering it still beats but sent nothing for stall: a 504, its own,
// saying so.
func StallError(host string, stall time.Duration, named bool) *gateway.Error {
	msg := fmt.Sprintf("the host answering this conversation (%s) stalled: it is alive but sent nothing for %s in the middle of its answer; ", host, stall)
	if named {
		msg += "its outcome is unknown and it is not run a second time under the same request id: send it with a new request id to run it again"
	} else {
		msg += "send it again"
	}
	return &gateway.Error{Status: http.StatusGatewayTimeout, Type: anthropic.ErrTimeout, Message: msg}
}

// CutError is what the client of a relayed answer hears when its
// holder stopped in the middle of it. A request with an explicit id is
// not run a second time under it (its outcome is unknown: the holder may
// have finished the turn); any other may simply be sent again.
func CutError(host string, named bool) *gateway.Error {
	msg := "the host answering this conversation (" + host + ") stopped in the middle of its answer; "
	if named {
		msg += "its outcome is unknown and it is not run a second time under the same request id: send it with a new request id to run it again"
	} else {
		msg += "nothing of this turn was saved: send it again"
	}
	return gateway.Unavailable(msg)
}
