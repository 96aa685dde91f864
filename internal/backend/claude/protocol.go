package claude

import (
	"encoding/json"
)

// line is one stdout message of the CLI. Only the fields the driver acts on
// are decoded; the CLI adds fields often and unknown ones are ignored.
type line struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`

	SessionID       string  `json:"session_id"`
	UUID            string  `json:"uuid"`
	ParentToolUseID *string `json:"parent_tool_use_id"`

	// stream_event
	Event           *streamEvent     `json:"event"`
	APIMessageID    string           `json:"api_message_id"`
	AbandonedBlocks *abandonedBlocks `json:"abandoned_blocks"`

	// assistant / user
	Message           json.RawMessage `json:"message"`
	ToolUseResult     json.RawMessage `json:"tool_use_result"` // user: what a CLI tool returned, structured
	Error             string          `json:"error"`
	IsAPIErrorMessage bool            `json:"is_api_error_message"`
	APIErrorStatus    *int            `json:"api_error_status"`
	APIErrorType      string          `json:"api_error_type"`
	APIError          string          `json:"api_error"`
	APIErrorParams    *struct {
		RateLimitInfo *rateLimitInfo `json:"rate_limit_info"`
	} `json:"api_error_params"`

	// control_request / control_response
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`

	// result
	IsError        bool     `json:"is_error"`
	Result         string   `json:"result"`
	StopReason     string   `json:"stop_reason"`
	TerminalReason string   `json:"terminal_reason"`
	Errors         []string `json:"errors"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	// StructuredOutput is the value the model gave the StructuredOutput
	// tool, checked by the CLI against the session's schema.
	StructuredOutput json.RawMessage `json:"structured_output"`
	Usage            *usageJSON      `json:"usage"`

	// system/api_retry
	RetryDelayMS float64 `json:"retry_delay_ms"`
	ErrorStatus  *int    `json:"error_status"`

	// rate_limit_event
	RateLimitInfo *rateLimitInfo `json:"rate_limit_info"`

	// more is set by the reader when further output was already read.
	more bool
}

type abandonedBlocks struct {
	APIMessageID   string `json:"api_message_id"`
	FromBlockIndex int    `json:"from_block_index"`
}

// rateLimitInfo is a rate_limit_event's report. Its top-level
// utilization comes only with a warning; unifiedWindows carries every
// window's share used and reset on each event.
type rateLimitInfo struct {
	Status         string                   `json:"status"`
	ResetsAt       float64                  `json:"resetsAt"` // unix seconds
	RateLimitType  string                   `json:"rateLimitType"`
	Utilization    float64                  `json:"utilization"` // 0..1 of the window used
	UnifiedWindows map[string]unifiedWindow `json:"unifiedWindows"`
	// IsUsingOverage: the plan's limit is reached and the request was
	// served from paid extra usage.
	IsUsingOverage bool `json:"isUsingOverage"`
}

type unifiedWindow struct {
	Status      string  `json:"status"`
	ResetsAt    float64 `json:"resetsAt"`
	Utilization float64 `json:"utilization"`
}

type usageJSON struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// streamEvent is the raw Anthropic SSE event inside a stream_event line.
type streamEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Message      *struct {
		ID    string     `json:"id"`
		Model string     `json:"model"`
		Usage *usageJSON `json:"usage"`
	} `json:"message"`
	Usage *usageJSON `json:"usage"`
}

// deltaFields are the parts of a delta the driver looks into.
type deltaFields struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	StopReason string `json:"stop_reason"`
}

// assistantMessage is the message of an assistant line: one content block.
type assistantMessage struct {
	ID         string            `json:"id"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
}

// --- host → CLI ---

type controlRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type initializeRequest struct {
	Subtype               string         `json:"subtype"`
	SystemPrompt          []string       `json:"systemPrompt"`
	SDKMCPServers         []string       `json:"sdkMcpServers,omitempty"`
	SDKMCPServerManifests map[string]any `json:"sdkMcpServerManifests,omitempty"`
	// JSONSchema makes the CLI offer its StructuredOutput tool with this
	// schema and check the model's call of it.
	JSONSchema json.RawMessage `json:"jsonSchema,omitempty"`
}

type interruptRequest struct {
	Subtype string `json:"subtype"`
}

// rewindRequest takes the CLI's conversation back to before one of its
// messages; rewindResponse says whether it did.
type rewindRequest struct {
	Subtype string `json:"subtype"`
	Target  string `json:"target_message_uuid"`
	// LastSeen is the latest message the host wrote: the CLI refuses to
	// rewind past prompts it cannot tell the host has seen.
	LastSeen string `json:"last_seen_user_message_uuid"`
}

type rewindResponse struct {
	Rewound bool `json:"rewound"`
}

type userLine struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	// UUID names the message in the CLI's transcript: the CLI keeps the
	// host's id, so the first message can be rewound to (Recycle).
	UUID            string      `json:"uuid,omitempty"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
}

type userMessage struct {
	Role    string            `json:"role"`
	Content []json.RawMessage `json:"content"`
}

type controlResponse struct {
	Type     string       `json:"type"`
	Response responseBody `json:"response"`
}

type responseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// controlResponsePayload is the inner part of a control_response line.
type controlResponsePayload struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// incomingRequest is a control request from the CLI.
type incomingRequest struct {
	Subtype    string          `json:"subtype"`
	ToolName   string          `json:"tool_name"`
	ToolUse    string          `json:"tool_use_id"`
	Input      json.RawMessage `json:"input"`
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// mcpMessageRequest carries a message of our in-process MCP server to the
// CLI (the same subtype the CLI uses to reach the server).
type mcpMessageRequest struct {
	Subtype    string          `json:"subtype"`
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// rpcMessage is a JSON-RPC message inside an mcp_message request.
type rpcMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Name string `json:"name"`
		Meta struct {
			ToolUseID string `json:"claudecode/toolUseId"`
		} `json:"_meta"`
	} `json:"params"`
}
