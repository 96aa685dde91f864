// Package events reads what the agy CLI writes in stream-json mode: each
// stdout line parsed into a typed event, one turn's events folded into its
// answer and usage, and the CLI's failure texts classified. It does no I/O;
// the driver feeds it lines.
//
// The shapes follow agy's observed output (one compact JSON object per
// line, envelope {"event": kind, kind: {…}}); kinds and step types this
// package does not know are reported as such, never as errors, because the
// CLI adds them between versions.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Kind is an event's kind, the envelope's "event".
type Kind string

// The event kinds agy is known to write.
const (
	KindInit    Kind = "init"
	KindStep    Kind = "step_update"
	KindResult  Kind = "result"
	KindCommand Kind = "command_result"
)

// Step states.
const (
	StateActive = "ACTIVE"
	StateDone   = "DONE"
	StateError  = "ERROR"
)

// Step types.
const (
	StepUserInput     = "user_input"
	StepAgentResponse = "agent_response"
	StepTool          = "tool"
	StepCheckpoint    = "checkpoint"
	StepSystemMessage = "system_message"
	StepErrorMessage  = "error_message"
	StepFinish        = "finish"
	StepUnknown       = "unknown"
)

// Result statuses. SUCCESS is the only good one.
const (
	StatusSuccess     = "SUCCESS"
	StatusError       = "ERROR"
	StatusCanceled    = "CANCELED"
	StatusInterrupted = "INTERRUPTED"
)

// Event is one line of agy's stream-json output.
type Event struct {
	Kind Kind
	// ConversationID is init's conversation (the only event that carries
	// one at the top level).
	ConversationID string
	Init           *Init
	Step           *Step
	Result         *Result
	Command        *Command
}

// Known reports whether the event is of a kind this package reads.
func (e Event) Known() bool {
	switch e.Kind {
	case KindInit, KindStep, KindResult, KindCommand:
		return true
	}
	return false
}

// Init opens a process's session.
type Init struct {
	Model          string   `json:"model"` // only when --model was passed
	Cwd            string   `json:"cwd"`
	Tools          []string `json:"tools"`
	PermissionMode string   `json:"permission_mode"`
}

// Step is one step_update: a step's state as it progresses.
type Step struct {
	ConversationID string    `json:"conversation_id"`
	Index          int       `json:"step_index"`
	State          string    `json:"state"`
	Type           string    `json:"step_type"`
	ToolName       string    `json:"tool_name"`
	TextDelta      string    `json:"text_delta"`
	Duration       float64   `json:"duration_seconds"`
	Usage          *Usage    `json:"usage"`
	Tool           *ToolInfo `json:"tool_info"`
}

// KnownType reports whether the step's type is one this package knows.
func (s *Step) KnownType() bool {
	switch s.Type {
	case StepUserInput, StepAgentResponse, StepTool, StepCheckpoint, StepSystemMessage, StepErrorMessage, StepFinish, StepUnknown:
		return true
	}
	return false
}

// ToolInfo is a tool step's call and, once it settled, its outcome.
type ToolInfo struct {
	Name string `json:"name"`
	// Parameters are a subset of the model's arguments, as agy shows them.
	Parameters json.RawMessage `json:"parameters"`
	Output     *string         `json:"output"`
	Error      *ToolError      `json:"error"`
}

// ToolError is why a tool step failed.
type ToolError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Result ends a turn. Its usage, duration and turn count are cumulative
// over the conversation, not the turn.
type Result struct {
	ConversationID string  `json:"conversation_id"`
	Status         string  `json:"status"`
	Response       string  `json:"response"`
	Error          string  `json:"error"`
	Duration       float64 `json:"duration_seconds"`
	NumTurns       int     `json:"num_turns"`
	// StructuredOutput is the answer's value under --json-schema.
	StructuredOutput json.RawMessage `json:"structured_output"`
	Usage            Usage           `json:"usage"`
	DeniedActions    []DeniedAction  `json:"denied_actions"`
	Command          *Command        `json:"command"`
}

// DeniedAction is an action headless mode refused without asking.
type DeniedAction struct {
	Action      string `json:"action"`
	DisplayName string `json:"display_name"`
}

// Command is a print-mode command's answer (models, /usage, …).
type Command struct {
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

// Usage is agy's token count. Input excludes cache reads; output includes
// thinking.
type Usage struct {
	Input     int `json:"input_tokens"`
	Output    int `json:"output_tokens"`
	Thinking  int `json:"thinking_tokens"`
	CacheRead int `json:"cache_read_tokens"`
	Total     int `json:"total_tokens"`
}

func (u Usage) plus(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.Thinking + v.Thinking, u.CacheRead + v.CacheRead, u.Total + v.Total}
}

func (u Usage) minus(v Usage) Usage {
	return Usage{u.Input - v.Input, u.Output - v.Output, u.Thinking - v.Thinking, u.CacheRead - v.CacheRead, u.Total - v.Total}
}

// covers reports whether u is at least v in every count: a cumulative
// total that has not gone backwards.
func (u Usage) covers(v Usage) bool {
	return u.Input >= v.Input && u.Output >= v.Output && u.Thinking >= v.Thinking && u.CacheRead >= v.CacheRead
}

// ErrNotJSON is a stdout line that is not a JSON object; ErrNoKind one
// without an "event".
var (
	ErrNotJSON = errors.New("agy wrote a line that is not a JSON object")
	ErrNoKind  = errors.New(`agy wrote a line without an "event"`)
)

// envelope is a line before its kind is known.
type envelope struct {
	Event          Kind            `json:"event"`
	ConversationID string          `json:"conversation_id"`
	Init           json.RawMessage `json:"init"`
	Step           json.RawMessage `json:"step_update"`
	Result         json.RawMessage `json:"result"`
	Command        json.RawMessage `json:"command"`
}

// Parse reads one stdout line. A line of an unknown kind is returned with
// only its Kind set (see Known); a known kind whose body is malformed is an
// error.
func Parse(line []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrNotJSON, err)
	}
	ev := Event{Kind: env.Event, ConversationID: env.ConversationID}
	var body json.RawMessage
	var into any
	switch env.Event {
	case "":
		return Event{}, ErrNoKind
	case KindInit:
		ev.Init = new(Init)
		body, into = env.Init, ev.Init
	case KindStep:
		ev.Step = new(Step)
		body, into = env.Step, ev.Step
	case KindResult:
		ev.Result = new(Result)
		body, into = env.Result, ev.Result
	case KindCommand:
		ev.Command = new(Command)
		body, into = env.Command, ev.Command
	default:
		return ev, nil
	}
	if len(body) == 0 {
		return Event{}, fmt.Errorf("agy wrote a %s event without its body", env.Event)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return Event{}, fmt.Errorf("agy wrote a malformed %s event: %w", env.Event, err)
	}
	return ev, nil
}
