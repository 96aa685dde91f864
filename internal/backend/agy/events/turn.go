package events

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
)

// Turn folds the events of one turn, from its user_input step to its
// result.
type Turn struct {
	text    strings.Builder
	steps   Usage // the DONE model steps' usage, summed
	tools   []ToolCall
	result  *Result
	unknown []string
	errored bool // an error_message step came
}

// ToolCall is a tool step as it stands.
type ToolCall struct {
	Index      int
	Name       string
	Parameters json.RawMessage
	Output     *string
	Error      *ToolError
	State      string
}

// silent reports whether the call settled with neither output nor error:
// on 1.1.x, how a tool headless mode refused without asking shows.
func (c ToolCall) silent() bool {
	return c.State == StateDone && c.Output == nil && c.Error == nil
}

// Add takes the turn's next event and returns the text it adds to the
// answer, if any.
func (t *Turn) Add(ev Event) string {
	switch {
	case ev.Result != nil:
		t.result = ev.Result
	case ev.Step != nil:
		return t.step(ev.Step)
	}
	return ""
}

func (t *Turn) step(s *Step) string {
	if !s.KnownType() {
		t.unknown = append(t.unknown, s.Type)
		return ""
	}
	switch s.Type {
	case StepAgentResponse:
		if s.State == StateDone && s.Usage != nil {
			t.steps = t.steps.plus(*s.Usage)
		}
		t.text.WriteString(s.TextDelta)
		return s.TextDelta
	case StepTool:
		t.toolStep(s)
	case StepCheckpoint:
		// 1.1.13 put a model call's usage on a checkpoint.
		if s.State == StateDone && s.Usage != nil {
			t.steps = t.steps.plus(*s.Usage)
		}
	case StepErrorMessage:
		t.errored = true
	}
	return ""
}

func (t *Turn) toolStep(s *Step) {
	call := ToolCall{Index: s.Index, Name: s.ToolName, State: s.State}
	if s.Tool != nil {
		call.Parameters, call.Output, call.Error = s.Tool.Parameters, s.Tool.Output, s.Tool.Error
		if call.Name == "" {
			call.Name = s.Tool.Name
		}
	}
	for i := range t.tools {
		if t.tools[i].Index == s.Index {
			t.tools[i] = call
			return
		}
	}
	t.tools = append(t.tools, call)
}

// Turns is the conversation's turn count the result reported (0 before
// it came).
func (t *Turn) Turns() int {
	if t.result == nil {
		return 0
	}
	return t.result.NumTurns
}

// StepUsage is the usage of the turn's model steps so far.
func (t *Turn) StepUsage() Usage { return t.steps }

// Done reports whether the turn's result came.
func (t *Turn) Done() bool { return t.result != nil }

// UnknownSteps lists step types this package did not know, for the log.
func (t *Turn) UnknownSteps() []string { return t.unknown }

// Outcome is a finished turn as the client sees it.
type Outcome struct {
	ConversationID string
	Text           string
	// Usage is this turn's; Cumulative the conversation's so far, which
	// the next turn's Outcome takes as prev.
	Usage      Usage
	Cumulative Usage
	Tools      []ToolCall
	// Structured is the value a --json-schema session answered, nil
	// without one.
	Structured json.RawMessage
	// Failure is nil when the turn succeeded.
	Failure *backend.Failure
}

// Outcome is the finished turn. prev is the conversation's cumulative
// usage after its previous turn, when known: this turn's usage is the
// difference. Without it (the first turn this process saw of a resumed
// conversation) the turn's model steps are summed instead, which can miss
// calls agy makes out of sight. softDenyNotice says agy's stderr carried
// its headless auto-deny notice during the turn.
func (t *Turn) Outcome(prev *Usage, softDenyNotice bool) Outcome {
	o := Outcome{Text: t.text.String(), Tools: t.tools, Usage: t.steps}
	r := t.result
	if r == nil {
		o.Failure = &backend.Failure{Kind: backend.FailBackend, Message: "agy ended the turn without a result"}
		return o
	}
	o.ConversationID, o.Cumulative = r.ConversationID, r.Usage
	switch {
	case prev != nil && r.Usage.covers(*prev):
		o.Usage = r.Usage.minus(*prev)
	case prev == nil && (r.NumTurns == 1 || r.NumTurns == 2 && len(r.StructuredOutput) > 0):
		// A conversation's first turn (under a schema, its answer's own
		// internal turn counts too): the total is the turn's.
		o.Usage = r.Usage
	}
	if v := bytes.TrimSpace(r.StructuredOutput); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
		o.Structured = v
	}
	if o.Text == "" && r.Response != "" {
		o.Text = r.Response
	}
	o.Failure = classify(r, t, softDenyNotice)
	return o
}

// BackendUsage is u in the backend's terms.
func (u Usage) BackendUsage() backend.Usage {
	return backend.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadInputTokens: u.CacheRead}
}
