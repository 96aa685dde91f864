package openai

import (
	"encoding/json"
	"strconv"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// Item types of the Responses API this package takes and gives.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	ItemReasoning          = "reasoning"
	ItemReference          = "item_reference"
	ItemWebSearchCall      = "web_search_call"
	// A custom tool's call and its output: read as a function call (and
	// its output) marked Custom, given back under these types.
	ItemCustomToolCall       = "custom_tool_call"
	ItemCustomToolCallOutput = "custom_tool_call_output"
)

// ResponsesRequest is a decoded and validated POST /v1/responses body.
type ResponsesRequest struct {
	Model        string
	Instructions string
	Input        []Item
	// MediaAt is where the input's first audio or video part is ("" for
	// none).
	MediaAt string
	// Tools are the client's functions, a namespace's flattened into
	// names the model can use (see FlatName). RawTools and RawToolChoice
	// are the request's own, for the response object to repeat.
	Tools         []Function
	RawTools      json.RawMessage
	RawToolChoice json.RawMessage
	// MaxTokens is max_output_tokens; 0 when absent.
	MaxTokens int
	// ReasoningEffort (none … xhigh) and ReasoningSummary (auto, concise,
	// detailed) come from reasoning; Reasoning reports the object was sent.
	Reasoning        bool
	ReasoningEffort  string
	ReasoningSummary string
	Format           *ResponseFormat
	Stream           bool
	Store            bool // default true, as upstream
	Background       bool
	Previous         string // previous_response_id
	// EncryptedReasoning: include names reasoning.encrypted_content, so
	// reasoning items carry the model's thinking, sealed.
	EncryptedReasoning bool
	ParallelToolCalls  *bool

	Identity
	ClientMetadata map[string]json.RawMessage

	// WebSearch is the web_search tool, when offered.
	WebSearch *WebSearch

	// Ignored names parameters accepted but not honoured.
	Ignored []string
}

// WebSearch is a Responses request's web search: its tool's type, the
// domains results must come from, and the options a search cannot take.
type WebSearch struct {
	Tool           string
	AllowedDomains []string
	Unhonoured     []string
}

// Item is one input item. Message items use Role and Parts; calls CallID,
// Name, Namespace and Arguments; outputs CallID and Parts; reasoning
// Summary and Encrypted; references Ref.
type Item struct {
	Type      string
	ID        string
	Role      string
	Parts     []Part
	CallID    string
	Name      string
	Namespace string
	Arguments string
	Summary   []string
	Encrypted string
	Ref       string
	// Custom marks a custom tool's call (Arguments {"input": text}) or
	// its output.
	Custom bool
}

// namespaceSep joins a namespace and a function name into one tool name
// the model can use; names never contain it otherwise (FlatName refuses).
const namespaceSep = "__"

// FlatName is the tool name the model sees for a function in a namespace.
func FlatName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + namespaceSep + name
}

// ItemsJSON renders items as the API shows input items, each with an id
// (prefix and its index when the client gave none).
func ItemsJSON(items []Item, idPrefix string) json.RawMessage {
	out := make([]any, len(items))
	for i, it := range items {
		id := it.ID
		if id == "" {
			id = idPrefix + "_" + strconv.Itoa(i)
		}
		switch {
		case it.Type == ItemFunctionCall && it.Custom:
			out[i] = customCallItem{ItemCustomToolCall, id, StatusCompleted, it.CallID, it.Name, customInput([]byte(it.Arguments))}
		case it.Type == ItemFunctionCallOutput && it.Custom:
			out[i] = struct {
				Type   string `json:"type"`
				ID     string `json:"id"`
				CallID string `json:"call_id"`
				Output []any  `json:"output"`
			}{ItemCustomToolCallOutput, id, it.CallID, partsJSON(it.Parts, false)}
		case it.Type == ItemFunctionCall:
			out[i] = struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				Status    string `json:"status"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Namespace string `json:"namespace,omitempty"`
				Arguments string `json:"arguments"`
			}{it.Type, id, StatusCompleted, it.CallID, it.Name, it.Namespace, it.Arguments}
		case it.Type == ItemFunctionCallOutput:
			out[i] = struct {
				Type   string `json:"type"`
				ID     string `json:"id"`
				CallID string `json:"call_id"`
				Output []any  `json:"output"`
			}{it.Type, id, it.CallID, partsJSON(it.Parts, false)}
		case it.Type == ItemReasoning:
			summary := make([]any, len(it.Summary))
			for j, s := range it.Summary {
				summary[j] = summaryText(s)
			}
			out[i] = struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				Summary   []any  `json:"summary"`
				Encrypted string `json:"encrypted_content,omitempty"`
			}{it.Type, id, summary, it.Encrypted}
		default:
			out[i] = struct {
				Type    string `json:"type"`
				ID      string `json:"id"`
				Role    string `json:"role"`
				Content []any  `json:"content"`
			}{ItemMessage, id, it.Role, partsJSON(it.Parts, it.Role == RoleAssistant)}
		}
	}
	raw, _ := json.Marshal(out)
	return raw
}

func partsJSON(parts []Part, assistant bool) []any {
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == PartImage && p.URL != "":
			out = append(out, map[string]string{"type": "input_image", "image_url": p.URL})
		case p.Type == PartImage:
			out = append(out, map[string]string{"type": "input_image", "image_url": "data:" + p.MediaType + ";base64," + p.Data})
		case assistant:
			out = append(out, outputText(p.Text))
		default:
			out = append(out, map[string]string{"type": "input_text", "text": p.Text})
		}
	}
	return out
}

// DecodeItems reads items the way input is read: stored input and output
// items, when a response continues another.
func DecodeItems(raw json.RawMessage) ([]Item, error) {
	items, err := jsonbody.DecodeArray("items", raw)
	if err != nil {
		return nil, err
	}
	out := make([]Item, len(items))
	for i, r := range items {
		if out[i], err = decodeItem(jsonbody.Index("items", i), r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
