// Package openai holds the OpenAI Chat Completions wire format and its
// translation to and from the gateway's common form: a chat request becomes
// the Anthropic Messages request the gateway runs, and the gateway's
// Anthropic-shaped answer becomes a chat.completion or a stream of
// chat.completion.chunk events. Each direction has its own file. It does no
// I/O.
package openai

// Chat roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Part types a chat message's content may hold.
const (
	PartText  = "text"
	PartImage = "image_url"
	// PartDocument is a file the client attached (a PDF or plain text):
	// Data is its base64, Text its file name.
	PartDocument = "file"
)

// ChatRequest is a decoded and validated POST /v1/chat/completions body.
// Everything in it has been checked: translating it cannot fail.
type ChatRequest struct {
	Model    string
	Messages []ChatMessage
	// MediaAt is where the first audio or video part is ("" for none).
	MediaAt string
	Tools   []Function
	// MaxTokens is max_completion_tokens, else max_tokens; 0 when absent.
	// MaxTokensField names the one it came from.
	MaxTokens      int
	MaxTokensField string
	Stop           []string
	// ReasoningEffort is none, minimal, low, medium, high or xhigh.
	ReasoningEffort string
	Stream          bool
	IncludeUsage    bool // stream_options.include_usage
	Format          *ResponseFormat
	// WebSearch is set by web_search_options: the model may search the
	// web. WebSearchUnhonoured names the options a search cannot take.
	WebSearch           bool
	WebSearchUnhonoured []string

	Identity

	// Ignored names the parameters that were accepted but cannot be
	// honoured, for X-Meridian-Ignored-Params.
	Ignored []string
}

// Identity is what a body says about who is asking and in which
// conversation: user, prompt_cache_key and metadata.
type Identity struct {
	User           string
	PromptCacheKey string
	Metadata       map[string]string
}

// ChatMessage is one message of the conversation.
type ChatMessage struct {
	Role  string
	Parts []Part
	// ToolCalls are an assistant message's calls.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// Part is one piece of a message's content: text, or an image given as a
// data URL (MediaType and Data, base64) or an https URL.
type Part struct {
	Type      string
	Text      string
	MediaType string
	Data      string
	URL       string
}

// ToolCall is a function call the model made, as the client echoes it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // a JSON object, as text
	// Custom marks a custom tool's call: Arguments hold its input as
	// {"input": text}.
	Custom bool
}

// Function is a tool the client offers. Name is what the model calls it;
// a function of a Responses namespace also keeps its Namespace and its
// Local name there, so a call maps back exactly.
type Function struct {
	Name        string
	Description string
	Parameters  []byte // a JSON Schema object; nil when absent
	Namespace   string
	Local       string
	// Custom marks a custom (freeform) tool: Parameters are its one text
	// input, {"input": string} (see custom.go).
	Custom bool
}

// ResponseFormat asks for a JSON answer: any JSON object (json_object), or
// one matching Schema (json_schema).
type ResponseFormat struct {
	Type   string // json_object or json_schema
	Name   string
	Schema []byte
	// Field is where the request asked for it (response_format, or
	// text.format on the Responses API), for the error of a misfit.
	Field string
}
