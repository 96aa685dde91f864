package toolhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/meridian-gw/meridian/internal/backend"
)

// A CLI whose model makes one tool call per response (agy) would cost a
// model round trip per call of a batch the client could run at once. The
// parallel tool lets the model make several client calls in one: the turn
// hands them to the client as one batch, the client answers them in any
// order, and the model gets every result in one answer, in the order of
// its calls.

// ParallelTool is the parallel tool's name, unless a client tool has it.
const ParallelTool = "parallel_calls"

// maxParallel bounds the calls of one parallel call.
const maxParallel = 16

// addParallel offers the parallel tool, under a name no client tool has.
func (h *Host) addParallel(srv *mcp.Server) {
	name := ParallelTool
	for i := 2; h.clientName[name] != ""; i++ {
		name = ParallelTool + "_" + strconv.Itoa(i)
	}
	h.parallel = name
	names := make([]string, 0, len(h.offered))
	for _, o := range h.offered {
		names = append(names, o.Name)
	}
	schema, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"calls"},
		"properties": map[string]any{"calls": map[string]any{
			"type": "array", "minItems": 1, "maxItems": maxParallel,
			"description": "The calls to make together, each a tool of this server and its arguments.",
			"items": map[string]any{"type": "object", "required": []string{"tool", "arguments"},
				"properties": map[string]any{
					"tool":      map[string]any{"type": "string", "enum": names},
					"arguments": map[string]any{"type": "object"},
				}}}}})
	srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(schema),
		Description: "Make several calls of this server's other tools at once. They run together; the answer holds every call's result, in the order of the calls. " +
			"Use it whenever the calls do not depend on each other's results."}, h.callParallel)
}

// Parallel is the parallel tool's name, "" when the host offers none.
func (h *Host) Parallel() string { return h.parallel }

// callParallel holds a parallel call until each of its parts has its
// result. A call the host cannot split (no calls, too many, a tool not
// offered) is refused whole at once: none of its parts runs.
func (h *Host) callParallel(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	parts, refusal := h.split(req.Params.Arguments)
	if refusal != "" {
		return toolResult(backend.ToolResult{IsError: true, Content: []json.RawMessage{textBlock(refusal)}})
	}
	c := &Call{Name: h.parallel, Args: req.Params.Arguments, Parts: parts}
	if err := h.arrive(ctx, c); err != nil {
		return nil, err
	}
	results := make([]backend.ToolResult, len(parts))
	for i, p := range parts {
		r, err := h.await(ctx, p)
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return toolResult(combine(parts, results))
}

// split reads a parallel call's parts, or why it cannot be made.
func (h *Host) split(args json.RawMessage) ([]*Call, string) {
	var in struct {
		Calls []struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, fmt.Sprintf("%s takes {\"calls\": [{\"tool\": NAME, \"arguments\": {...}}, ...]}; these arguments do not fit: %v. No call ran.", h.parallel, err)
	}
	switch {
	case len(in.Calls) == 0:
		return nil, h.parallel + " needs at least one call in \"calls\". No call ran."
	case len(in.Calls) > maxParallel:
		return nil, fmt.Sprintf("%s makes at most %d calls at once; these are %d. No call ran: split them.", h.parallel, maxParallel, len(in.Calls))
	}
	parts := make([]*Call, 0, len(in.Calls))
	for i, pc := range in.Calls {
		if h.clientName[pc.Tool] == "" {
			return nil, fmt.Sprintf("call %d of %d names %q, which is not a tool of this server (%s cannot call itself). No call ran.", i+1, len(in.Calls), pc.Tool, h.parallel)
		}
		parts = append(parts, &Call{Name: pc.Tool, Args: partArguments(pc.Arguments), result: make(chan backend.ToolResult, 1)})
	}
	return parts, ""
}

// partArguments is a part's arguments as an object: none is {}, and an
// object given as a JSON string (which models do) is that object.
func partArguments(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage(`{}`)
	}
	var s string
	if json.Unmarshal(t, &s) == nil && json.Valid([]byte(s)) && bytes.HasPrefix(bytes.TrimSpace([]byte(s)), []byte("{")) {
		return json.RawMessage(s)
	}
	return t
}

// combine is a parallel call's answer: each part's result under a line
// naming it, in the order of the calls. It is an error only when every
// part failed.
func combine(parts []*Call, results []backend.ToolResult) backend.ToolResult {
	out := backend.ToolResult{IsError: true}
	for i, r := range results {
		head := fmt.Sprintf("Result of call %d of %d (%s):", i+1, len(parts), parts[i].Name)
		if r.IsError {
			head = fmt.Sprintf("Call %d of %d (%s) failed:", i+1, len(parts), parts[i].Name)
		} else {
			out.IsError = false
		}
		out.Content = append(out.Content, textBlock(head))
		out.Content = append(out.Content, r.Content...)
	}
	return out
}

func textBlock(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return b
}
