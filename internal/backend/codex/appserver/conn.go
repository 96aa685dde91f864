// Package appserver speaks the stdio protocol of `codex app-server`: one
// JSON object per line each way, JSON-RPC 2.0 without its "jsonrpc"
// member. Requests are answered by id; notifications arrive in order;
// the server's own requests (approvals, tool calls) are answered by the
// caller's handler. It knows no method: the codex driver does.
package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// maxLine bounds one message: a turn's items (a whole file's change, a
// long answer) fit many times over.
const maxLine = 64 << 20

// Message is one line of the protocol: a request (ID and Method), a
// notification (Method only) or a response (ID with Result or Error).
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is a request's failure as the other side said it.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("codex app-server: %s (%d)", e.Message, e.Code) }

// Handler answers one of the server's requests: the result, or an error
// it is told (an *Error keeps its code).
type Handler func(ctx context.Context, method string, params json.RawMessage) (any, error)

// ErrClosed is a call's error once the server's output ended.
var ErrClosed = errors.New("codex app-server: its output ended")

// Conn is one app-server's stdio.
type Conn struct {
	w      io.Writer
	handle Handler
	// trace sees every line, "in" or "out", as it crosses.
	trace func(dir string, line []byte)
	notes chan Message
	done  chan struct{}
	ctx   context.Context // the server's requests are handled under it
	stop  context.CancelFunc

	wmu sync.Mutex
	mu  sync.Mutex
	id  int64
	// waiting are the calls not answered yet, by id.
	waiting  map[int64]chan Message
	err      error
	ended    bool
	handlers sync.WaitGroup

	dropping chan struct{}
	dropOnce sync.Once
}

// Options are a Conn's optional parts.
type Options struct {
	// Handle answers the server's requests (nil: each is refused).
	Handle Handler
	// Trace sees every line both ways (tests check them against the
	// recorded protocol).
	Trace func(dir string, line []byte)
	// Backlog is how many notifications wait unread before reading
	// stops (default 256).
	Backlog int
}

// New reads the server's output r and writes its input w until r ends.
// Notifications must be read: an unread backlog stops the reading.
func New(r io.Reader, w io.Writer, o Options) *Conn {
	c := Open(w, o)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if err != nil {
				c.End(err)
				return
			}
			if err := c.Line(line); err != nil {
				c.End(err)
				return
			}
		}
	}()
	return c
}

// Open is a Conn whose output lines are handed to it (Line, then End
// once) by whoever reads the server's stdout.
func Open(w io.Writer, o Options) *Conn {
	ctx, stop := context.WithCancel(context.Background())
	c := &Conn{w: w, handle: o.Handle, trace: o.Trace, notes: make(chan Message, max(o.Backlog, 256)), done: make(chan struct{}),
		dropping: make(chan struct{}), ctx: ctx, stop: stop, waiting: map[int64]chan Message{}}
	if c.trace == nil {
		c.trace = func(string, []byte) {}
	}
	return c
}

// Drop makes the Conn drop notifications nobody will read from now on,
// so a server that is being closed is never stopped by its backlog.
func (c *Conn) Drop() { c.dropOnce.Do(func() { close(c.dropping) }) }

// Notifications are the server's notifications, in order; closed when
// its output ends.
func (c *Conn) Notifications() <-chan Message { return c.notes }

// Done is closed when the server's output ended and every handler of its
// requests returned; Err says why it ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the output ended (nil while it goes on; io.EOF for a clean
// end).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a request and decodes its result into result (nil: not
// decoded). ctx bounds the wait, not the request: codex has no cancel
// of a request (a turn is interrupted by its own method).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	// A call whose context already ended is not sent: its answer could
	// come back before the wait below sees the end, and win.
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return ErrClosed
	}
	c.id++
	id := c.id
	answer := make(chan Message, 1)
	c.waiting[id] = answer
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	if err := c.write(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case m, ok := <-answer:
		if !ok {
			return ErrClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("codex app-server: the answer to %s: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.write(m)
}

func (c *Conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("codex app-server: %w", err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.trace("out", b)
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("codex app-server: write: %w", err)
	}
	return nil
}

// Line takes one line of the server's output; an error means the output
// cannot be read on (End follows).
func (c *Conn) Line(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	c.trace("in", line)
	var m Message
	if err := json.Unmarshal(line, &m); err != nil {
		return fmt.Errorf("codex app-server wrote a line that is not a message: %w", err)
	}
	c.dispatch(m)
	return nil
}

// End says the server's output ended, for err (io.EOF: cleanly). Every
// call waiting fails, the notifications close, and the server's requests
// still being handled are joined.
func (c *Conn) End(err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	c.err = err
	for id, ch := range c.waiting {
		close(ch)
		delete(c.waiting, id)
	}
	c.mu.Unlock()
	close(c.notes)
	c.stop()
	c.handlers.Wait()
	close(c.done)
}

// readLine reads one line of at most maxLine bytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := br.ReadLine()
		if err != nil {
			return nil, err
		}
		line = append(line, part...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("codex app-server wrote a line over %d bytes", maxLine)
		}
		if !isPrefix {
			return line, nil
		}
	}
}

func (c *Conn) dispatch(m Message) {
	switch {
	case m.Method == "" && len(m.ID) > 0: // a response
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return // not an id of ours
		}
		c.mu.Lock()
		ch := c.waiting[id]
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case len(m.ID) > 0: // the server's request
		c.handlers.Go(func() { c.answer(m) })
	default:
		select {
		case c.notes <- m:
		case <-c.dropping:
		}
	}
}

// answer runs the handler for one of the server's requests and replies.
func (c *Conn) answer(m Message) {
	reply := map[string]any{"id": m.ID}
	if c.handle == nil {
		reply["error"] = &Error{Code: -32601, Message: "meridian does not answer " + m.Method}
	} else if result, err := c.handle(c.ctx, m.Method, m.Params); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: -32000, Message: err.Error()}
		}
		reply["error"] = e
	} else {
		reply["result"] = result
	}
	_ = c.write(reply) // a server gone ends the conn anyway
}
