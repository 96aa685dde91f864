// Package backend defines what the gateway needs from a model backend: start
// a session, run turns on it that report events, close it. Backends (the
// claude CLI driver today) implement it; the types carry no protocol of their
// own beyond the Anthropic content-block shapes both sides already speak.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Backend starts sessions.
type Backend interface {
	Start(ctx context.Context, opts StartOptions) (Session, error)
}

// ErrPause pauses a turn where it stands when an emit callback returns it:
// the model called client tools, and their results come with a later
// request. Turn returns a Result with Paused set and leaves the calls
// pending inside the backend.
var ErrPause = errors.New("backend: turn paused for client tools")

// ErrToolsFixed says a session cannot take a new tool list where it
// stands; the caller starts a new session for the new list.
var ErrToolsFixed = errors.New("backend: the session's tool list cannot change now")

// ToolSetter is a Session whose client tools can change between turns
// without a restart.
type ToolSetter interface {
	SetTools(ctx context.Context, tools []Tool) error
}

// SpareBackend is a Backend that can start a session ahead of need, for
// the start-time options only (no system prompt, no tools, no resume): a
// spare, which a new conversation's first turn takes instead of waiting
// for a process to start.
type SpareBackend interface {
	StartSpare(ctx context.Context, opts StartOptions) (Session, error)
}

// EndOnly is a Backend that can continue a session only where it ends:
// StartOptions.ResumeAt must be the session's last message. A conversation
// that goes back (an undo) starts over with its history instead.
type EndOnly interface {
	ResumesAtEndOnly()
}

// SchemaEnforcer is a Backend that makes an answer fit a JSON schema
// itself (StartOptions.JSONSchema, Result.Structured); for any other the
// schema is asked for in the prompt and checked afterwards.
type SchemaEnforcer interface {
	EnforcesSchema()
}

// MediaAdapter is a Backend that takes audio and video (document blocks
// of those media types) and adapts them for its CLI; any other gets a
// request refused before it runs.
type MediaAdapter interface {
	AdaptsMedia()
}

// WebSearcher is a Backend that can search the web itself, under the
// rules StartOptions.WebSearch gives.
type WebSearcher interface {
	SearchesWeb()
}

// NoOutputLimit is a Backend that cannot bound an answer's length: a
// request's output limit is reported to its client as ignored.
type NoOutputLimit interface {
	IgnoresOutputLimit()
}

// ModelResolver is a Backend that takes only models its Inspector lists:
// ResolveModel makes the model a request names (with its start options)
// into one of those, or says why it cannot, before anything starts.
type ModelResolver interface {
	ResolveModel(model string, opts StartOptions, listed []Model) (string, error)
}

// Binder is a spare session: Bind gives it its conversation's system
// prompt, tools and output schema (opts' others are the spare's own),
// once, before its first turn.
type Binder interface {
	Bind(opts StartOptions) error
}

// Recycler is a Session whose process can drop the conversation it holds
// and serve another under the same contract (system prompt, tools, start
// options): Recycle leaves it as it stood before its first message. The
// session id stays; the dropped conversation can no longer be resumed
// from it, so its next turn starts over with its history.
type Recycler interface {
	Recycle(ctx context.Context) error
}

// Freezer is a Session whose process can be stopped while it waits and
// resumed before use: a stopped process wakes no timers. Close works on
// a frozen session. Settle is how long after its start the process should
// stay awake before a first freeze, for start-up work its CLI does on a
// timer that, frozen sooner, it would do in its next turn (0: none).
type Freezer interface {
	Freeze() error
	Thaw() error
	Settle() time.Duration
}

// Yielder is a Session whose process can be lowered to the least CPU
// priority before a Close nothing waits for.
type Yielder interface {
	Yield()
}

// Closer is a Backend with work of its own (a check it runs for its
// callers, say) that ends when its gateway closes.
type Closer interface {
	Close()
}

// ResultHolder is a Session that can say where it holds the tool results
// its latest turn delivered: the place to resume it at with them in it,
// when the turn was cut before it answered ("" until all were taken).
type ResultHolder interface {
	HeldAt() string
}

// Measurer is a Session that can say how much memory its process holds,
// in bytes (its proportional share, PSS, where the system tells).
type Measurer interface {
	Memory() (int64, error)
}

// Processor is a Session backed by one OS process: its pid goes into
// the turn log so an operator can tell which process ran a turn.
type Processor interface {
	Pid() int
}

// Session is one live conversation process. Turns run one at a time.
type Session interface {
	// Turn sends one user message and reports the model's output to emit
	// until the turn ends. On a paused session it continues the paused
	// turn instead: Input.Results answer the pending tool calls and
	// Input.Content, if any, is steering the model reads beside them. If
	// emit returns ErrPause the turn pauses; any other error interrupts it
	// and Turn returns that error once the backend has settled.
	Turn(ctx context.Context, in Input, emit func(*Event) error) (*Result, error)
	// Answer gives a client tool call its result now or, if the call has
	// not reached the backend yet, as soon as it does.
	Answer(r ToolResult) error
	// Close ends the session and joins its process. It is safe to call more
	// than once and always waits for the process to be gone.
	Close() error
	// ID is the backend's session id once known (empty before the first turn).
	ID() string
	// Alive reports whether the session can still take a turn.
	Alive() bool
}

// StartOptions fix a session's contract: changing any of them needs a new
// session.
type StartOptions struct {
	Model           string
	System          []string // system prompt blocks; empty means none
	Dir             string   // working directory of the backend process
	MaxOutputTokens int      // 0 leaves the backend's default
	Thinking        Thinking
	Effort          string // low, medium, high, xhigh, max; empty for default

	// Tools are the client's tools, offered to the model in this order.
	Tools []Tool
	// WebSearch, when set, enables the backend's own web search, and only
	// that, under the client's rules; nil leaves it off.
	WebSearch *WebSearch
	// JSONSchema, when set, is the schema the answer must be: the backend
	// makes the model return one such value, checked, as its answer.
	JSONSchema json.RawMessage

	// Autonomous sessions work on their own, for nobody waiting at the
	// other end: the backend's own tools are available, every permission
	// request is granted, and the user's settings apply. Gateway sessions
	// are never autonomous: their client owns the tools.
	Autonomous bool

	// SessionID, when set, is the id the new session gets, so it is known
	// before the backend reports it.
	SessionID string
	// Resume continues a stored session instead of starting empty: the
	// session with id Resume, cut at message ResumeAt. The continuation is
	// a new session (SessionID) so no two processes ever write one
	// session's history.
	Resume   string
	ResumeAt string
}

// Thinking selects the model's extended thinking.
type Thinking struct {
	Mode   ThinkingMode
	Budget int // tokens, for ThinkingEnabled
}

// ThinkingMode is off, a token budget, or the model's adaptive choice.
type ThinkingMode uint8

// Thinking modes.
const (
	ThinkingOff ThinkingMode = iota
	ThinkingEnabled
	ThinkingAdaptive
)

// WebSearch is what a client allows the model's web searches: the
// domains results may come from or must not (either may be empty), and
// how many searches one response may make (0: no bound of its own).
type WebSearch struct {
	AllowedDomains []string
	BlockedDomains []string
	MaxUses        int
}

// Tool is a client tool: the client executes it.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Input is what a turn gives the backend: a user message (Anthropic
// content blocks, already rendered) and, when a paused turn continues, the
// results of its pending tool calls.
type Input struct {
	Content []json.RawMessage
	Results []ToolResult
}

// ToolResult answers one client tool call.
type ToolResult struct {
	ToolUseID string
	Content   []json.RawMessage // text and image blocks
	IsError   bool
}

// EventKind tells which fields of an Event are set.
type EventKind uint8

// Event kinds.
const (
	// MessageStart: an upstream message began; Usage holds its input
	// counts and Model the model that answers.
	MessageStart EventKind = iota + 1
	// BlockStart: Index, BlockType and Block (the content_block JSON).
	BlockStart
	// BlockDelta: Index, DeltaType, Delta (the delta JSON) and, for text
	// deltas, Text.
	BlockDelta
	// BlockStop: Index.
	BlockStop
	// Abandon: the stopped block at Index belongs to an upstream message
	// that broke off; a retry supersedes it. A stream cannot take it back,
	// a complete answer leaves it out.
	Abandon
	// MessageDelta: an upstream message ended with StopReason.
	MessageDelta
	// RateLimit: the account's rate-limit window state (ResetsAt, Status).
	RateLimit
	// Retry: the backend will retry an upstream call after RetryDelay
	// because of HTTP Status.
	Retry
	// Flush: the backend has no more output at hand; a good moment to send
	// what was rendered so far. Bursts go out in one write, trickles at once.
	Flush
)

// Event is one thing that happened during a turn. One struct for all kinds
// keeps the hot relay path free of interface allocations.
type Event struct {
	Kind EventKind

	Index     int
	BlockType string
	Block     json.RawMessage
	DeltaType string
	Delta     json.RawMessage
	Text      string

	StopReason string
	Usage      Usage
	Model      string

	Status      int
	LimitStatus string // RateLimit: window status ("allowed", "rejected", …)
	LimitType   string // RateLimit: which window (five_hour, seven_day, …)
	Utilization float64
	// Windows are every window a RateLimit event reports, each with its
	// own share used and reset; the fields above are the one it is about.
	Windows []LimitWindow
	// Overage: the RateLimit event says the plan's windows are spent and
	// this request draws the account's paid extra usage.
	Overage    bool
	RetryDelay time.Duration
	ResetsAt   time.Time
}

// LimitWindow is one of the account's rate-limit windows as a RateLimit
// event reports it.
type LimitWindow struct {
	Type        string // five_hour, seven_day, seven_day_overage_included, …
	Status      string
	Utilization float64 // 0..1 of the window used
	ResetsAt    time.Time
}

// Usage is token accounting.
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
}

// Result ends a turn.
type Result struct {
	SessionID  string
	StopReason string
	Usage      Usage
	Model      string
	// Pin is the backend's id of the last message of the turn: where the
	// session can later be resumed to stand exactly after this turn.
	Pin string
	// InputBytes is what the turn wrote to the backend.
	InputBytes int
	// Paused reports a turn that waits for client tool results; the
	// session holds the calls pending.
	Paused bool
	// Text is the turn's final answer as the backend reports it.
	Text string
	// CostUSD is what the session has cost so far, as the backend counts.
	CostUSD float64
	// WebSearches is how many web searches the backend ran in the turn.
	WebSearches int
	// NativeWork lists what the CLI's own tools did in the turn, each as
	// "tool: ran|denied|failed", for a CLI whose tools are gated (agy).
	NativeWork []string
	// Structured is the answer as the value StartOptions.JSONSchema asked
	// for, checked by the backend; nil when the model gave none.
	Structured json.RawMessage
	// Failure is set when the turn did not produce a usable answer.
	Failure *Failure
}

// FailureKind classifies a failed turn.
type FailureKind uint8

// Failure kinds.
const (
	// FailUpstream: the model API refused or failed; Status and Type say how.
	FailUpstream FailureKind = iota + 1
	// FailPromptTooLong: the conversation does not fit the model's context.
	FailPromptTooLong
	// FailLimit: the backend stopped on one of its own limits (turns, budget).
	FailLimit
	// FailBackend: the backend process misbehaved (crashed, bad output).
	FailBackend
	// FailUnavailable: the backend cannot be started (binary missing).
	FailUnavailable
	// FailFormat: the model gave no answer that fits the output schema.
	FailFormat
)

// Failure describes why a turn failed.
type Failure struct {
	Kind    FailureKind
	Status  int    // upstream HTTP status, when known
	Type    string // upstream error type ("rate_limit_error"), when known
	Message string
	// Code is the backend's own name for the failure when it gives one
	// (the CLI's "model_requires_usage_credits"), for decisions, not for
	// the client.
	Code string
	// Waits the upstream stated, when they survived into what the backend
	// reported.
	RetryDelay time.Duration
	ResetsAt   time.Time
}

func (f *Failure) Error() string { return f.Message }

// CodeStaleSession is the Failure code of a session that could not be
// resumed because the backend has no record of it: the conversation must
// start over with its whole history.
const CodeStaleSession = "stale_session"

// ErrUnavailable wraps failures to start a backend that retrying cannot
// fix until the operator acts (for example, the CLI is not installed).
var ErrUnavailable = errors.New("backend unavailable")

// Inspector reports facts about a backend for health and model listings.
type Inspector interface {
	// Version is the backend CLI's version.
	Version(ctx context.Context) (string, error)
	// Auth is the backend's login state.
	Auth(ctx context.Context) (Auth, error)
	// Models lists the models the backend offers.
	Models(ctx context.Context) ([]Model, error)
}

// Auth is a backend's login state.
type Auth struct {
	LoggedIn bool   `json:"logged_in"`
	Method   string `json:"method,omitempty"`
	Provider string `json:"provider,omitempty"`
}

// Model is one model a backend offers.
type Model struct {
	Alias       string // what the backend accepts, e.g. "opus"
	ID          string // the model id it resolves to
	DisplayName string
	Description string
}

// PlanUsage is what a backend reports of its account's plan limits.
type PlanUsage struct {
	// Subscription is the plan ("pro", "max", …); empty for API keys.
	Subscription string `json:"subscription,omitempty"`
	// Available is false when plan limits do not apply to this login (an
	// API key) or could not be read; Windows is then empty.
	Available bool         `json:"available"`
	Windows   []PlanWindow `json:"windows"`
	// ExtraUsage is the pay-as-you-go allowance beyond the plan, when the
	// backend reports one.
	ExtraUsage *ExtraUsage `json:"extra_usage,omitempty"`
}

// PlanReader is an Inspector that can read its account's plan limits.
type PlanReader interface {
	PlanUsage(ctx context.Context) (PlanUsage, error)
}

// PlanWindow is one rate-limit window of a plan.
type PlanWindow struct {
	Name        string     `json:"name"` // five_hour, seven_day, seven_day_opus, or a model bucket's label
	Utilization *float64   `json:"utilization"`
	ResetsAt    *time.Time `json:"resets_at"`
}

// ExtraUsage is a plan's allowance beyond its windows.
type ExtraUsage struct {
	Enabled      bool     `json:"enabled"`
	MonthlyLimit *float64 `json:"monthly_limit"`
	UsedCredits  *float64 `json:"used_credits"`
	Utilization  *float64 `json:"utilization"`
	Currency     string   `json:"currency,omitempty"`
}
