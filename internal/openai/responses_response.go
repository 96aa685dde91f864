package openai

import (
	"encoding/json"
	"strconv"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Response statuses.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Finished reports whether a status is final.
func Finished(status string) bool {
	switch status {
	case StatusCompleted, StatusIncomplete, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// ResponseMeta is what a response repeats of its request and how its
// output is rendered.
type ResponseMeta struct {
	ID        string
	CreatedAt int64
	req       *ResponsesRequest
	sealer    *Sealer
}

// Meta starts a response to the request. The sealer seals reasoning when
// the request includes reasoning.encrypted_content; it may be nil.
func (r *ResponsesRequest) Meta(id string, createdAt int64, sealer *Sealer) ResponseMeta {
	return ResponseMeta{ID: id, CreatedAt: createdAt, req: r, sealer: sealer}
}

// Response is a response object.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          ReasoningConfig    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               TextConfig         `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              json.RawMessage    `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError says why a response failed. RetryAfter, in seconds, is
// the wait before retrying, for failures that carry one.
type ResponseError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

// IncompleteDetails says why a response stopped short.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ReasoningConfig repeats the request's reasoning settings.
type ReasoningConfig struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig repeats the request's text format.
type TextConfig struct {
	Format json.RawMessage `json:"format"`
}

// ResponseUsage is a response's token accounting; input tokens include the
// cached ones, as in the OpenAI API.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails says how much input came from the cache.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails would split out reasoning; the CLI does not report
// thinking tokens apart, so it is 0.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ResponseUsageOf converts Messages API usage.
func ResponseUsageOf(u anthropic.Usage) *ResponseUsage {
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return &ResponseUsage{
		InputTokens:        in,
		InputTokensDetails: InputTokensDetails{CachedTokens: u.CacheReadInputTokens},
		OutputTokens:       u.OutputTokens,
		TotalTokens:        in + u.OutputTokens,
	}
}

// Snapshot is the response object at a status, with its output items so
// far.
func (m ResponseMeta) Snapshot(status string, output []json.RawMessage) Response {
	r := m.req
	resp := Response{
		ID: m.ID, Object: "response", CreatedAt: m.CreatedAt, Status: status, Background: r.Background,
		Model: r.Model, Output: output, ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		Store: r.Store, Temperature: 1, TopP: 1, Truncation: "disabled", Metadata: r.Metadata,
		ToolChoice: r.RawToolChoice, Tools: r.RawTools,
	}
	if resp.Output == nil {
		resp.Output = []json.RawMessage{}
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if resp.ToolChoice == nil {
		resp.ToolChoice = json.RawMessage(`"auto"`)
	}
	if resp.Tools == nil {
		resp.Tools = json.RawMessage(`[]`)
	}
	if r.Instructions != "" {
		resp.Instructions = &r.Instructions
	}
	if r.MaxTokens > 0 {
		resp.MaxOutputTokens = &r.MaxTokens
	}
	if r.Previous != "" {
		resp.PreviousResponseID = &r.Previous
	}
	if r.ReasoningEffort != "" {
		resp.Reasoning.Effort = &r.ReasoningEffort
	}
	if r.ReasoningSummary != "" {
		resp.Reasoning.Summary = &r.ReasoningSummary
	}
	if r.User != "" {
		resp.User = &r.User
	}
	resp.Text.Format = json.RawMessage(`{"type":"text"}`)
	if f := r.Format; f != nil {
		resp.Text.Format, _ = json.Marshal(struct {
			Type   string          `json:"type"`
			Name   string          `json:"name,omitempty"`
			Schema json.RawMessage `json:"schema,omitempty"`
		}{f.Type, f.Name, f.Schema})
	}
	return resp
}

// Final is the response object of a finished answer: its status follows
// the stop reason (the output limit and a refusal leave it incomplete).
func (m ResponseMeta) Final(output []json.RawMessage, stopReason string, u anthropic.Usage) Response {
	resp := m.Snapshot(StatusCompleted, output)
	switch stopReason {
	case anthropic.StopMaxTokens, anthropic.StopContextLimit:
		resp.Status, resp.IncompleteDetails = StatusIncomplete, &IncompleteDetails{Reason: "max_output_tokens"}
	case anthropic.StopRefusal:
		resp.Status, resp.IncompleteDetails = StatusIncomplete, &IncompleteDetails{Reason: "content_filter"}
	}
	resp.Usage = ResponseUsageOf(u)
	return resp
}

// Complete is the response object of an answer given whole (not
// streamed): its output items, the text checked against the text format
// when the answer is complete (a *FormatError when it does not fit).
func (m ResponseMeta) Complete(model string, content []json.RawMessage, stopReason string, u anthropic.Usage) (Response, error) {
	resp := m.Final(nil, stopReason, u)
	if f := m.req.Format; f != nil && resp.Status == StatusCompleted {
		checked, err := checkContent(f, content)
		if err != nil {
			return Response{}, err
		}
		content = checked
	}
	resp.Output, resp.Model = m.Output(content), model
	return resp, nil
}

// checkContent checks an answer's text, all its text blocks together,
// against the format; the checked text takes the place of the first.
func checkContent(f *ResponseFormat, content []json.RawMessage) ([]json.RawMessage, error) {
	var text []byte
	first := -1
	var out []json.RawMessage
	for _, raw := range content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == anthropic.BlockText {
			text = append(text, b.Text...)
			if first < 0 {
				first = len(out)
				out = append(out, nil)
			}
			continue
		}
		out = append(out, raw)
	}
	if first < 0 {
		return content, nil
	}
	checked, err := f.Check(string(text))
	if err != nil {
		return nil, err
	}
	out[first] = anthropic.TextBlock(checked)
	return out, nil
}

// Failed is the response object of a failed answer.
func (m ResponseMeta) Failed(output []json.RawMessage, status int, message string, retryAfter int) Response {
	resp := m.Snapshot(StatusFailed, output)
	typ, code := errorKind(status)
	if code == "" {
		code = typ
	}
	resp.Error = &ResponseError{Code: code, Message: message, RetryAfter: retryAfter}
	return resp
}

// outItem is one output item as it is built.
type outItem struct {
	kind      string // message, function_call, reasoning, web_search_call
	id        string
	done      bool
	cut       bool       // closed by a failure or cancellation: incomplete
	text      []byte     // message text, reasoning summary, call arguments or a search's input
	cites     []Citation // a message's: the searched pages its text names
	callID    string
	name      string
	namespace string
	custom    bool // a custom tool's call: its text is its arguments, {"input": …}
	thought   Thought
	sealed    string // the thought, sealed once so every rendering agrees
}

func (m ResponseMeta) itemID(kind string, index int) string {
	prefix := map[string]string{ItemMessage: "msg", ItemFunctionCall: "fc", ItemReasoning: "rs", ItemWebSearchCall: "ws"}[kind]
	return prefix + "_" + m.ID[len("resp_"):] + "_" + strconv.Itoa(index)
}

// call fills a function call item from the model's tool name, mapping a
// flat name back to its namespace.
func (m ResponseMeta) call(it *outItem, id, modelName string) {
	it.callID, it.name = id, modelName
	for _, f := range m.req.Tools {
		if f.Name == modelName && f.Namespace != "" {
			it.name, it.namespace = f.Local, f.Namespace
		}
		if f.Name == modelName && f.Custom {
			it.custom = true
		}
	}
}

// withReasoning reports whether reasoning items appear in the output: the
// client asked for reasoning.
func (m ResponseMeta) withReasoning() bool { return m.req.Reasoning }

// json renders the item; a finished one is complete.
func (m ResponseMeta) json(it *outItem) json.RawMessage {
	if it.kind == ItemReasoning && it.done && it.sealed == "" && m.req.EncryptedReasoning && m.sealer != nil {
		it.sealed = m.sealer.Seal(it.thought)
	}
	status := StatusInProgress
	switch {
	case it.cut:
		status = StatusIncomplete
	case it.done:
		status = StatusCompleted
	}
	var v any
	switch it.kind {
	case ItemMessage:
		content := []any{}
		if it.done {
			content = append(content, citedText(string(it.text), it.cites))
		}
		v = struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Status  string `json:"status"`
			Role    string `json:"role"`
			Content []any  `json:"content"`
		}{it.id, ItemMessage, status, RoleAssistant, content}
	case ItemFunctionCall:
		if it.custom {
			input := ""
			if it.done {
				input = customInput(it.text)
			}
			v = customCallItem{ItemCustomToolCall, it.id, status, it.callID, it.name, input}
			break
		}
		args := string(it.text)
		if it.done && args == "" {
			args = "{}"
		}
		v = struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Status    string `json:"status"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
			Arguments string `json:"arguments"`
		}{it.id, ItemFunctionCall, status, it.callID, it.name, it.namespace, args}
	case ItemWebSearchCall:
		var in struct {
			Query string `json:"query"`
		}
		_ = json.Unmarshal(it.text, &in)
		type action struct {
			Type  string `json:"type"`
			Query string `json:"query"`
		}
		v = struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Status string `json:"status"`
			Action action `json:"action"`
		}{it.id, ItemWebSearchCall, status, action{"search", in.Query}}
	default:
		summary := []any{}
		if it.done && len(it.text) > 0 {
			summary = append(summary, summaryText(string(it.text)))
		}
		v = struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Summary   []any  `json:"summary"`
			Encrypted string `json:"encrypted_content,omitempty"`
		}{it.id, ItemReasoning, summary, it.sealed}
	}
	out, _ := json.Marshal(v)
	return out
}

type textPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

func outputText(s string) textPart {
	return textPart{Type: "output_text", Text: s, Annotations: []any{}, Logprobs: []any{}}
}

// citedText is output text with its url_citation annotations.
func citedText(s string, cites []Citation) textPart {
	p := outputText(s)
	for _, c := range cites {
		p.Annotations = append(p.Annotations, struct {
			Type       string `json:"type"`
			StartIndex int    `json:"start_index"`
			EndIndex   int    `json:"end_index"`
			URL        string `json:"url"`
			Title      string `json:"title"`
		}{"url_citation", c.Start, c.End, c.URL, c.Title})
	}
	return p
}

type summaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func summaryText(s string) summaryPart { return summaryPart{Type: "summary_text", Text: s} }

// Output renders an answer's blocks (Messages API shaped) as output
// items: one message per text block, one function_call per tool call, and
// reasoning where the client asked for it (its summary the thinking when a
// summary was asked for; sealed when encrypted content was).
func (m ResponseMeta) Output(content []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	var pages []SearchPage
	for _, raw := range content {
		var b answerBlock
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		it := &outItem{done: true}
		switch b.Type {
		case anthropic.BlockText:
			if b.Text == "" {
				continue
			}
			it.kind, it.text = ItemMessage, []byte(b.Text)
			it.cites = citations(b.Text, pages)
		case anthropic.BlockServerToolUse:
			it.kind, it.text = ItemWebSearchCall, compact(b.Input)
		case anthropic.BlockWebSearchToolResult:
			pages = append(pages, searchPages(raw)...)
			continue
		case anthropic.BlockToolUse:
			it.kind, it.text = ItemFunctionCall, compact(b.Input)
			m.call(it, b.ID, b.Name)
		case anthropic.BlockThinking, anthropic.BlockRedactedThinking:
			if !m.withReasoning() {
				continue
			}
			it.kind = ItemReasoning
			it.thought = Thought{Thinking: b.Thinking, Signature: b.Signature, Redacted: b.Data}
			if m.req.ReasoningSummary != "" {
				it.text = []byte(b.Thinking)
			}
		default:
			continue
		}
		it.id = m.itemID(it.kind, len(out))
		out = append(out, m.json(it))
	}
	return out
}
