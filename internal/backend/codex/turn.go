package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/codex/appserver"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// lateArrival is how long a tools/call may wait for the mcpToolCall item
// that announces it before it goes to the client anyway: codex writes the
// item before it calls the server, so the item is normally read first;
// the wait only keeps the client's order of text and call.
const lateArrival = 250 * time.Millisecond

// errPaused ends a relay that handed client tool calls out.
var errPaused = errors.New("codex turn paused for client tools")

// Turn sends one user message as a codex turn and relays the answer until
// the turn completes. When the model calls client tools the turn pauses
// (the calls held in the session's MCP server) and a later Turn with
// their results continues it. A turn whose context ends is interrupted.
func (s *Session) Turn(ctx context.Context, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	s.mu.Lock()
	r := s.paused
	s.mu.Unlock()
	switch {
	case r != nil:
		if len(in.Results) == 0 {
			return nil, errors.New("a paused codex turn continues only with its tool calls' results")
		}
		s.mu.Lock()
		s.paused = nil
		s.mu.Unlock()
		if len(in.Content) > 0 {
			// Steering beside the results: codex reads it in the running turn.
			if items, err := userInput(in.Content); err == nil && len(items) > 0 {
				_ = s.conn.Call(ctx, "turn/steer", map[string]any{"threadId": s.thread, "expectedTurnId": r.turnID, "input": items}, nil)
			}
		}
		for _, res := range in.Results {
			if err := s.Answer(res); err != nil {
				return nil, s.abort(err)
			}
		}
	case len(in.Results) > 0:
		return nil, errors.New("this codex session has no tool calls waiting for results")
	default:
		items, err := userInput(in.Content)
		if err != nil {
			return &backend.Result{Failure: &backend.Failure{Kind: backend.FailUpstream, Status: 400, Type: "invalid_request_error", Message: err.Error()}}, nil
		}
		if f, err := s.ensureThread(ctx); err != nil || f != nil {
			if err != nil && ctx.Err() != nil {
				return nil, s.abort(ctx.Err())
			}
			return &backend.Result{SessionID: s.thread, Failure: f}, err
		}
		params := map[string]any{"threadId": s.thread, "input": items}
		if s.opts.Effort != "" {
			params["effort"] = effort(s.opts.Effort)
		}
		if len(s.opts.JSONSchema) > 0 {
			params["outputSchema"] = s.opts.JSONSchema
		}
		var started struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		b, _ := json.Marshal(params)
		if err := s.conn.Call(ctx, "turn/start", params, &started); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, s.abort(ctx.Err())
			case errors.Is(err, appserver.ErrClosed):
				return &backend.Result{SessionID: s.thread, Failure: s.exitFailure()}, nil
			}
			return nil, s.abort(fmt.Errorf("codex turn/start: %w", err))
		}
		s.turns++
		r = &relay{s: s, turnID: started.Turn.ID, inputBytes: len(b), texts: map[string]bool{}}
	}
	r.emit, r.ev, r.next, r.text = emit, &backend.Event{Kind: backend.MessageStart, Model: s.model}, 0, -1
	if err := emit(r.ev); err != nil {
		return nil, s.interrupt(r, err)
	}
	var arrivals <-chan *toolhost.Call
	if s.tools != nil {
		arrivals = s.tools.Arrivals()
	}
	err := r.match()
	for {
		if errors.Is(err, errPaused) {
			s.mu.Lock()
			s.paused = r
			s.mu.Unlock()
			return &backend.Result{SessionID: s.thread, StopReason: "tool_use", Model: s.model, Paused: true, InputBytes: r.inputBytes}, nil
		}
		if err != nil {
			return nil, s.interrupt(r, err)
		}
		if r.done {
			return s.finish(r)
		}
		select {
		case m, ok := <-s.conn.Notifications():
			if !ok {
				return &backend.Result{SessionID: s.thread, Failure: s.exitFailure()}, nil
			}
			err = r.take(m)
		case c := <-arrivals:
			r.arrived = append(r.arrived, c)
			err = r.match()
		case <-r.late:
			calls := r.arrived
			r.arrived, r.late = nil, nil
			err = r.handOut(calls...)
		case <-ctx.Done():
			return nil, s.interrupt(r, ctx.Err())
		}
	}
}

// interrupt ends a turn nobody waits for: turn/interrupt, then its
// completion is awaited for InterruptGrace; a codex that does not settle
// in time is killed. err is returned.
func (s *Session) interrupt(r *relay, err error) error {
	s.mu.Lock()
	s.paused = nil
	s.mu.Unlock()
	// A call held for the client would hold the turn: codex gets an error
	// for it before the interrupt.
	for _, c := range s.calls.Release() {
		c.Answer(backend.ToolResult{IsError: true, Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"the client went away"}`)}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.d.cfg.InterruptGrace)
	defer cancel()
	if s.conn.Call(ctx, "turn/interrupt", map[string]any{"threadId": s.thread, "turnId": r.turnID}, nil) != nil {
		return s.abort(err)
	}
	r.emit = func(*backend.Event) error { return nil }
	for !r.done {
		select {
		case m, ok := <-s.conn.Notifications():
			if !ok {
				s.dead.Store(true)
				return err
			}
			_ = r.take(m)
		case c := <-s.arrivalsOrNil():
			c.Answer(backend.ToolResult{IsError: true, Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"the turn was interrupted"}`)}})
		case <-ctx.Done():
			return s.abort(err)
		}
	}
	s.prev = r.usage
	return err
}

func (s *Session) arrivalsOrNil() <-chan *toolhost.Call {
	if s.tools == nil {
		return nil
	}
	return s.tools.Arrivals()
}

// abort ends a turn that cannot finish: the process goes.
func (s *Session) abort(err error) error {
	s.kill()
	return err
}

// finish ends a turn whose completion came.
func (s *Session) finish(r *relay) (*backend.Result, error) {
	s.calls.Release()
	usage := r.usage.since(s.prev)
	s.prev = r.usage
	res := &backend.Result{SessionID: s.thread, StopReason: "end_turn", Model: s.model, Usage: usage, Text: r.answer.String(),
		InputBytes: r.inputBytes, Pin: fmt.Sprintf("%s#%d", s.thread, s.turns)}
	switch {
	case r.failure != nil:
		res.Failure = r.failure.failure(r.resets)
		return res, nil
	case r.status == "interrupted":
		res.Failure = &backend.Failure{Kind: backend.FailBackend, Message: "codex interrupted the turn"}
		return res, nil
	case r.status != "completed":
		res.Failure = &backend.Failure{Kind: backend.FailBackend, Message: "codex ended the turn " + r.status}
		return res, nil
	}
	if len(s.opts.JSONSchema) > 0 {
		if t := strings.TrimSpace(r.last); json.Valid([]byte(t)) {
			res.Structured = json.RawMessage(t)
		}
	}
	if r.text >= 0 {
		*r.ev = backend.Event{Kind: backend.BlockStop, Index: r.text}
		if err := r.emit(r.ev); err != nil {
			return nil, s.abort(err)
		}
	}
	*r.ev = backend.Event{Kind: backend.MessageDelta, StopReason: "end_turn", Usage: usage}
	if err := r.emit(r.ev); err != nil {
		return nil, s.abort(err)
	}
	return res, nil
}

// Answer gives a held client tool call its result.
func (s *Session) Answer(res backend.ToolResult) error {
	if err := s.calls.Answer(res); err != nil {
		return fmt.Errorf("codex session: %w", err)
	}
	return nil
}

// effort is a request's effort in codex's terms: it has no "max".
func effort(e string) string {
	if e == "max" {
		return "xhigh"
	}
	return e
}

// userInput is a user message's blocks as codex's turn input: text, and
// images as data or web URLs.
func userInput(content []json.RawMessage) ([]map[string]any, error) {
	items := make([]map[string]any, 0, len(content))
	for i, raw := range content {
		var b backend.Block
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("content block %d is not JSON", i)
		}
		switch {
		case b.Type == "text":
			items = append(items, map[string]any{"type": "text", "text": b.Text, "text_elements": []any{}})
		case b.Type == "image" && b.Source.Type == "base64":
			items = append(items, map[string]any{"type": "image", "url": "data:" + b.Source.MediaType + ";base64," + b.Source.Data})
		case b.Type == "image" && b.Source.Type == "url":
			items = append(items, map[string]any{"type": "image", "url": b.Source.URL})
		case b.Type == "document" && b.Source.Type == "text":
			items = append(items, map[string]any{"type": "text", "text": b.Source.Data, "text_elements": []any{}})
		default:
			return nil, fmt.Errorf("content block %d: codex takes text and images, not %q", i, b.Type)
		}
	}
	return items, nil
}
