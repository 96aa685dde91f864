package claude

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
)

// The client's tools reach the model through an in-process MCP server that
// lives on the control protocol: the CLI sends tools/call as mcp_message
// requests, and the answer is whatever the client's tool returned. The
// model sees each tool as mcp__<server>__<name>; the short server name
// leaves room for the API's 64-character tool names.
const (
	mcpServer = "c"
	mcpPrefix = "mcp__" + mcpServer + "__"
	// maxToolName is the API's limit on a tool name.
	maxToolName = 64
)

// mcpSafeName is what a tool may be called as it is.
var mcpSafeName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// toolset maps the client's tools to MCP tools and back.
type toolset struct {
	clientName map[string]string // MCP name → client name
	list       []mcpTool         // in the client's order
}

type mcpTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func newToolset(tools []backend.Tool) *toolset {
	ts := &toolset{clientName: make(map[string]string, len(tools))}
	for i, t := range tools {
		name := t.Name
		if !mcpSafeName.MatchString(name) || len(mcpPrefix)+len(name) > maxToolName {
			name = "tool_" + strconv.Itoa(i)
		}
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		ts.clientName[name] = t.Name
		ts.list = append(ts.list, mcpTool{Name: name, Description: t.Description, InputSchema: schema})
	}
	return ts
}

// client returns the client's name for a tool name the model used, and
// whether it is one of the client's tools at all.
func (ts *toolset) client(modelName string) (string, bool) {
	if ts == nil {
		return "", false
	}
	mcpName, ok := strings.CutPrefix(modelName, mcpPrefix)
	if !ok {
		return "", false
	}
	name, ok := ts.clientName[mcpName]
	return name, ok
}

// manifest is the server description the initialize request carries, so
// the CLI needs no initialize or tools/list round trips.
func (ts *toolset) manifest() map[string]any {
	return map[string]any{mcpServer: map[string]any{
		"initializeResult": ts.initializeResult(),
		"toolsListResult":  map[string]any{"tools": ts.list},
	}}
}

func (ts *toolset) initializeResult() map[string]any {
	return map[string]any{
		"protocolVersion": "2025-11-25",
		// listChanged: the CLI re-reads the list when told it changed.
		"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
		"serverInfo":   map[string]any{"name": "meridian-client-tools", "version": "1"},
	}
}

// call is one client tool call: its tools/call request, once the CLI sent
// it, and its result, once the client did.
type call struct {
	requestID string
	rpcID     json.RawMessage
	result    *backend.ToolResult
}

// rewriteToolName puts the client's tool name into a tool_use block.
func rewriteToolName(block json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil {
		return block
	}
	n, _ := json.Marshal(name)
	m["name"] = n
	out, err := json.Marshal(m)
	if err != nil {
		return block
	}
	return out
}
