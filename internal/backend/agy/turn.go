package agy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy/events"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// lateArrival is how long a tools/call may wait for the tool step that
// announces it before it goes to the client anyway. agy writes the step
// before it runs the hook and calls the server, so the step is normally
// read first; the wait only keeps the client's order of text and call.
const lateArrival = 250 * time.Millisecond

// agyErrorWait is how long a failed turn waits for an AGY_ERROR line
// still on its way through stderr: stderr is read apart from stdout, and
// on a loaded machine its line was seen to come more than 500 ms after
// the result that needs it (a full test run on two cores). Only a failure
// without one waits it out.
const agyErrorWait = 2 * time.Second

// errPaused ends a relay that handed client tool calls out.
var errPaused = errors.New("agy turn paused for client tools")

// Turn sends one user message and relays agy's answer until its result.
// agy reads no interrupt on stdin: a turn cancelled mid-way kills the
// process, and the conversation continues in a new one by its id. When
// agy calls a client tool the turn pauses (the call held in the MCP
// server) and a later Turn with its result continues it.
func (s *Session) Turn(ctx context.Context, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	r := s.paused
	switch {
	case r != nil:
		if len(in.Results) == 0 {
			return nil, errors.New("a paused agy turn continues only with its tool calls' results")
		}
		s.paused = nil
		if err := s.answerAll(ctx, in); err != nil {
			return nil, s.abort(err)
		}
	case len(in.Results) > 0:
		return nil, errors.New("this agy session has no tool calls waiting for results")
	default:
		prompt, err := s.prompt(ctx, in.Content)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return &backend.Result{Failure: promptFailure(err)}, nil
		}
		if f, err := s.awaitInit(ctx); err != nil || f != nil {
			return &backend.Result{SessionID: s.ID(), Failure: f}, err
		}
		// What stderr said in the last turn is forgotten before agy reads
		// this one (agy may answer before the write returns): a notice
		// that came after its result must not fail this turn.
		s.softDeny.Store(false)
		s.mu.Lock()
		s.agyError = ""
		s.mu.Unlock()
		select {
		case <-s.agyErrorSeen:
		default:
		}
		line, _ := json.Marshal(map[string]any{"event": "user", "message": map[string]any{
			"role": "user", "content": []map[string]string{{"type": "text", "text": prompt}}}})
		if err := s.sp.Write(ctx, append(line, '\n')); err != nil {
			if ctx.Err() != nil {
				return nil, s.abort(ctx.Err())
			}
			return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
		}
		r = &relay{s: s}
	}
	r.emit, r.ev, r.next, r.text = emit, &backend.Event{Kind: backend.MessageStart, Model: s.model}, 0, -1
	if err := emit(r.ev); err != nil {
		return nil, s.abort(err)
	}
	var arrivals <-chan *toolhost.Call
	if s.tools != nil {
		arrivals = s.tools.Arrivals()
	}
	// A continued turn may hold calls that came while it was paused.
	err := r.match()
	for {
		if errors.Is(err, errPaused) {
			s.paused = r
			return &backend.Result{SessionID: s.ID(), StopReason: "tool_use", Model: s.model, Paused: true}, nil
		}
		if err != nil {
			return nil, s.abort(err)
		}
		if r.turn.Done() {
			return s.finish(r)
		}
		select {
		case line, ok := <-s.lines:
			if !ok {
				return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
			}
			err = r.take(line)
		case c := <-arrivals:
			r.arrived = append(r.arrived, c)
			err = r.match()
		case <-r.late:
			calls := r.arrived
			r.arrived, r.late = nil, nil
			err = r.handOut(calls...)
		case <-s.sp.Exited():
			// Gone, perhaps right after its result. What it wrote is read
			// first, briefly: a child it left may hold stdout open, so EOF
			// is not awaited; the group is killed so nothing keeps writing.
			s.kill()
			if err = r.drain(); err == nil && !r.turn.Done() {
				return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
			}
		case <-ctx.Done():
			return nil, s.abort(ctx.Err())
		}
	}
}

// finish ends a turn whose result came.
func (s *Session) finish(r *relay) (*backend.Result, error) {
	turn := &r.turn
	if steps := turn.UnknownSteps(); len(steps) > 0 {
		s.d.log.Info("agy wrote steps of types not known here; ignored them", "types", steps)
	}
	s.clearCalls()
	o := turn.Outcome(s.prev, s.softDeny.Swap(false))
	s.prev = &o.Cumulative
	if o.Failure != nil && o.Failure.Kind == backend.FailBackend {
		o.Failure = s.withAGYError(o.Failure)
	}
	res := &backend.Result{SessionID: s.ID(), StopReason: "end_turn", Usage: o.Usage.BackendUsage(), Model: s.model, Text: o.Text, Failure: o.Failure,
		Structured: o.Structured, NativeWork: nativeWork(o.Tools, s.readsAttached),
		// agy continues only where a conversation ends; the pin names that
		// end by its turn count.
		Pin: fmt.Sprintf("%s#%d", s.ID(), turn.Turns())}
	if o.Failure != nil {
		return res, nil
	}
	if r.text >= 0 {
		*r.ev = backend.Event{Kind: backend.BlockStop, Index: r.text}
		if err := r.emit(r.ev); err != nil {
			return nil, s.abort(err)
		}
	}
	*r.ev = backend.Event{Kind: backend.MessageDelta, StopReason: "end_turn", Usage: res.Usage}
	if err := r.emit(r.ev); err != nil {
		return nil, s.abort(err)
	}
	return res, nil
}

// withAGYError refines a failure the result left unexplained with what
// agy's AGY_ERROR line said during the turn (stream sessions report model
// errors there and go on). agy writes the line before its result, but on
// another pipe: a failed turn waits a moment for it.
func (s *Session) withAGYError(f *backend.Failure) *backend.Failure {
	s.mu.Lock()
	line := s.agyError
	s.mu.Unlock()
	if line == "" {
		select {
		case <-s.agyErrorSeen:
		case <-time.After(agyErrorWait):
		}
		s.mu.Lock()
		line = s.agyError
		s.mu.Unlock()
	}
	ae := events.ClassifyAGYError(line)
	if line == "" || ae == nil {
		return f
	}
	if ae.Message != "" {
		ae.Message = f.Message + ": " + ae.Message
	} else {
		ae.Message = f.Message
	}
	return ae
}

// Answer gives a held client tool call its result.
func (s *Session) Answer(res backend.ToolResult) error {
	if err := s.calls.Answer(res); err != nil {
		return fmt.Errorf("agy session: %w", err)
	}
	return nil
}

// answerAll answers a paused turn's calls. Text the client sent beside
// its results (steering) is left for the session's PreInvocation hook,
// which gives it to the model as a user message before its next call:
// beside the results, as the claude side sends it, never inside a tool's
// output.
func (s *Session) answerAll(ctx context.Context, in backend.Input) error {
	if steer, err := s.prompt(ctx, in.Content); err == nil && steer != "" && s.tools != nil {
		s.tools.setSteer(steer)
	}
	for _, res := range in.Results {
		if err := s.Answer(res); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) clearCalls() { s.calls.Release() }

// relay turns agy's lines into the gateway's events for one agy turn,
// across the responses its pauses split it into.
type relay struct {
	s    *Session
	emit func(*backend.Event) error
	ev   *backend.Event
	turn events.Turn
	next int // the current response's next block index
	text int // its open text block, -1 when none

	// Client tool calls are matched from two sides: the tool step that
	// shows the model's call, and the tools/call request agy then sends.
	announced []announcement
	arrived   []*toolhost.Call
	late      <-chan time.Time // set while a request waits for its step
	// reportedOut is the output the turn's earlier responses reported.
	reportedOut int
}

// announcement is an ACTIVE call_mcp_tool step to this session's server.
type announcement struct {
	step int
	tool string
}

// take handles one stdout line. Lines that are not events, or events of
// kinds not known here, are logged and skipped: agy adds kinds between
// versions.
func (r *relay) take(line []byte) error {
	e, err := events.Parse(line)
	if err != nil {
		r.s.d.log.Warn("agy wrote a line that is not an event; ignoring it", "line", truncate(line, 200), "err", err)
		return nil
	}
	if !e.Known() {
		r.s.d.log.Info("agy wrote an event of a kind not known here; ignoring it", "kind", e.Kind)
		return nil
	}
	if st := e.Step; st != nil && st.Type == events.StepTool {
		r.toolStep(st)
	}
	if delta := r.turn.Add(e); delta != "" {
		if err := r.textDelta(delta); err != nil {
			return err
		}
	}
	return r.match()
}

func (r *relay) textDelta(delta string) error {
	if r.text < 0 {
		r.text, r.next = r.next, r.next+1
		if err := backend.EmitTextStart(r.emit, r.ev, r.text); err != nil {
			return err
		}
	}
	return backend.EmitText(r.emit, r.ev, r.text, delta)
}

// toolStep notes a call_mcp_tool step to this session's server: announced
// while ACTIVE, forgotten once it settled (a call the gate refused never
// reaches the server).
func (r *relay) toolStep(st *events.Step) {
	if st.Tool == nil || (st.ToolName != callMCPTool && st.Tool.Name != callMCPTool) {
		return
	}
	var p struct {
		ServerName string `json:"ServerName"`
		ToolName   string `json:"ToolName"`
	}
	if json.Unmarshal(st.Tool.Parameters, &p) != nil || p.ServerName != serverName {
		return
	}
	for i, a := range r.announced {
		if a.step == st.Index {
			if st.State != events.StateActive {
				r.announced = append(r.announced[:i], r.announced[i+1:]...)
			}
			return
		}
	}
	if st.State == events.StateActive {
		r.announced = append(r.announced, announcement{step: st.Index, tool: p.ToolName})
	}
}

// match hands out each request whose step was read.
func (r *relay) match() error {
	for i := 0; i < len(r.arrived); {
		c := r.arrived[i]
		j := -1
		for k, a := range r.announced {
			if a.tool == c.Name {
				j = k
				break
			}
		}
		if j < 0 {
			i++
			continue
		}
		r.announced = append(r.announced[:j], r.announced[j+1:]...)
		r.arrived = append(r.arrived[:i], r.arrived[i+1:]...)
		if err := r.handOut(c); err != nil {
			return err
		}
	}
	switch {
	case len(r.arrived) == 0:
		r.late = nil
	case r.late == nil:
		r.late = time.After(lateArrival)
	}
	return nil
}

// handOut gives calls to the client as tool_use blocks and ends the
// response for them. The gateway answers a call whose arguments break its
// schema itself; when it answered all, the turn goes on.
func (r *relay) handOut(calls ...*toolhost.Call) error {
	if len(calls) == 0 {
		return nil
	}
	if r.text >= 0 {
		*r.ev = backend.Event{Kind: backend.BlockStop, Index: r.text}
		if err := r.emit(r.ev); err != nil {
			return err
		}
		r.text = -1
	}
	for _, c := range calls {
		// A parallel call is its parts, handed out as one batch; the
		// tool host answers it once each part has its result.
		parts := c.Parts
		if parts == nil {
			parts = []*toolhost.Call{c}
		}
		for _, p := range parts {
			id, err := r.s.calls.Hand("toolu_agy_", p)
			if err != nil {
				return err
			}
			if err := backend.EmitToolUse(r.emit, r.ev, r.next, id, r.s.tools.ClientName(p.Name), p.Args); err != nil {
				return err
			}
			r.next++
		}
	}
	out := r.turn.StepUsage().Output
	*r.ev = backend.Event{Kind: backend.MessageDelta, StopReason: "tool_use", Usage: backend.Usage{OutputTokens: out - r.reportedOut}}
	err := r.emit(r.ev)
	if errors.Is(err, backend.ErrPause) {
		r.reportedOut = out
		return errPaused
	}
	return err
}

// drain takes what an exited process left in the pipe, until the turn is
// done, the pipe ends, or nothing more comes for a moment.
func (r *relay) drain() error {
	for !r.turn.Done() {
		select {
		case line, ok := <-r.s.lines:
			if !ok {
				return nil
			}
			if err := r.take(line); err != nil {
				return err
			}
		case <-time.After(50 * time.Millisecond):
			return nil
		}
	}
	return nil
}
