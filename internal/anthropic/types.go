// Package anthropic holds the Messages API wire format: request types and
// their validating decoder, the response message, SSE event encoding and the
// error envelope. It does no I/O.
package anthropic

import "encoding/json"

// Roles a message may carry. RoleSystem is not in the public API but Claude
// Code sends mid-conversation system messages, so it is accepted.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

// Block types this package models; others are kept as raw JSON.
const (
	BlockText             = "text"
	BlockImage            = "image"
	BlockDocument         = "document"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	// The API's own tool calls and their results (web search).
	BlockServerToolUse       = "server_tool_use"
	BlockWebSearchToolResult = "web_search_tool_result"
)

// MessagesRequest is a decoded and validated POST /v1/messages body.
type MessagesRequest struct {
	Model         string
	Messages      []Message
	System        []string // text of each system block, in order
	MaxTokens     int      // 0 when absent
	Stream        bool
	StopSequences []string
	Temperature   *float64
	TopP          *float64
	TopK          *int
	Metadata      json.RawMessage
	Thinking      *Thinking
	Tools         []json.RawMessage
	ToolChoice    json.RawMessage
	Effort        string // output_config.effort
	// Format is the structured output the answer must be
	// (output_config.format), nil for free text.
	Format *OutputFormat
	// MediaAt is where the request's first audio or video part is, in
	// the client's own terms ("" for none): a backend that cannot adapt
	// media refuses the request there.
	MediaAt string
}

// OutputFormat asks for an answer that is one JSON value fitting Schema.
// Field names where the request asked for it, for the error of a misfit
// (output_config.format, or response_format and text.format when an
// OpenAI request was translated).
type OutputFormat struct {
	Schema json.RawMessage
	Field  string
}

// Thinking is the request's extended-thinking setting.
type Thinking struct {
	Type         string // enabled, disabled or adaptive
	BudgetTokens int
}

// Enabled reports whether the request asked for thinking output.
func (t *Thinking) Enabled() bool {
	return t != nil && (t.Type == "enabled" || t.Type == "adaptive")
}

// Message is one conversation turn. A plain string content is decoded as a
// single text block.
type Message struct {
	Role    string
	Content []ContentBlock
}

// ContentBlock is one block of a message. Fields are filled according to
// Type; Raw always holds the block exactly as the client sent it.
type ContentBlock struct {
	Type string

	Text string // text

	Source json.RawMessage // image, document
	Title  string          // document

	ID    string          // tool_use
	Name  string          // tool_use
	Input json.RawMessage // tool_use

	ToolUseID string         // tool_result
	Content   []ContentBlock // tool_result; a string is one text block
	IsError   bool           // tool_result

	Thinking  string // thinking
	Signature string // thinking
	Data      string // redacted_thinking

	Raw json.RawMessage
}

// Usage is the token accounting of a response.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	// ServerToolUse counts the tools the API ran itself, when any ran.
	ServerToolUse *ServerToolUse `json:"server_tool_use,omitempty"`
}

// ServerToolUse counts server tool calls.
type ServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
}

// Response is a non-streaming Messages API answer.
type Response struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   string            `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        Usage             `json:"usage"`
}
