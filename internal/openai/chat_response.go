package openai

import (
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Completion is a non-streaming chat.completion.
type Completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []Choice `json:"choices"`
	Usage             Usage    `json:"usage"`
	SystemFingerprint *string  `json:"system_fingerprint"`
}

// Choice is the one choice of a completion.
type Choice struct {
	Index        int              `json:"index"`
	Message      AssistantMessage `json:"message"`
	Logprobs     *struct{}        `json:"logprobs"`
	FinishReason string           `json:"finish_reason"`
}

// AssistantMessage is the answer. ReasoningContent carries thinking, for
// clients that asked for reasoning; it never mixes into Content.
type AssistantMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	Refusal          *string        `json:"refusal"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallJSON `json:"tool_calls,omitempty"`
	// Annotations cite the pages a web search found where the text names
	// them.
	Annotations []chatAnnotation `json:"annotations,omitempty"`
}

// ToolCallJSON is a call as the completion shows it.
type ToolCallJSON struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *FunctionCall `json:"function,omitempty"`
	Custom   *CustomCall   `json:"custom,omitempty"`
}

// CustomCall names a custom tool and its input, free text.
type CustomCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// FunctionCall names the function and its arguments, a JSON object as text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Usage is a completion's token accounting. Prompt tokens include the
// cached ones, as in the OpenAI API: reads and writes of the prompt cache.
type Usage struct {
	PromptTokens        int          `json:"prompt_tokens"`
	CompletionTokens    int          `json:"completion_tokens"`
	TotalTokens         int          `json:"total_tokens"`
	PromptTokensDetails PromptDetail `json:"prompt_tokens_details"`
}

// PromptDetail says how much of the prompt came from the cache.
type PromptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// UsageOf converts Messages API usage.
func UsageOf(u anthropic.Usage) Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return Usage{
		PromptTokens:        prompt,
		CompletionTokens:    u.OutputTokens,
		TotalTokens:         prompt + u.OutputTokens,
		PromptTokensDetails: PromptDetail{CachedTokens: u.CacheReadInputTokens},
	}
}

// FinishReason maps a Messages API stop reason.
func FinishReason(stop string) string {
	switch stop {
	case anthropic.StopMaxTokens, anthropic.StopContextLimit:
		return "length"
	case anthropic.StopToolUse:
		return "tool_calls"
	case anthropic.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

// Answer is what the gateway reports of a finished response.
type Answer struct {
	ID      string
	Model   string
	Created int64
	// Content is the answer's blocks, Messages API shaped.
	Content    []json.RawMessage
	StopReason string
	Usage      anthropic.Usage
	// Custom names the request's custom tools, whose calls are rendered
	// as custom calls.
	Custom map[string]bool
}

// answerBlock is one content block of an answer as the gateway gives it
// (Messages API shaped): what either OpenAI rendering reads of it.
type answerBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// NewCompletion renders an answer as a chat.completion. With a response
// format, a finished answer's text is checked first; one that does not fit
// is a *FormatError.
func NewCompletion(a Answer, format *ResponseFormat) (Completion, error) {
	msg := AssistantMessage{Role: RoleAssistant}
	var text, reasoning strings.Builder
	var pages []SearchPage
	for _, raw := range a.Content {
		var b answerBlock
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case anthropic.BlockWebSearchToolResult:
			pages = append(pages, searchPages(raw)...)
		case anthropic.BlockText:
			text.WriteString(b.Text)
		case anthropic.BlockThinking:
			reasoning.WriteString(b.Thinking)
		case anthropic.BlockToolUse:
			args := string(compact(b.Input))
			if args == "" {
				args = "{}"
			}
			if a.Custom[b.Name] {
				msg.ToolCalls = append(msg.ToolCalls, ToolCallJSON{ID: b.ID, Type: "custom", Custom: &CustomCall{Name: b.Name, Input: customInput(b.Input)}})
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCallJSON{ID: b.ID, Type: "function", Function: &FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	finish := FinishReason(a.StopReason)
	content := text.String()
	if format != nil && finish == "stop" {
		checked, err := format.Check(content)
		if err != nil {
			return Completion{}, err
		}
		content = checked
	}
	if content != "" || len(msg.ToolCalls) == 0 {
		msg.Content = &content
	}
	msg.ReasoningContent = reasoning.String()
	msg.Annotations = chatAnnotations(citations(content, pages))
	return Completion{
		ID:      a.ID,
		Object:  "chat.completion",
		Created: a.Created,
		Model:   a.Model,
		Choices: []Choice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   UsageOf(a.Usage),
	}, nil
}
