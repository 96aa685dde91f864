package agy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// agy's model sees a client's tools only through call_mcp_tool, by name:
// their descriptions and schemas are in the MCP server's tools/list, which
// the model does not read unless it thinks to. The session's standing
// instructions therefore name each tool with its description and input
// schema, say how to call them, and offer the parallel tool for calls
// that do not depend on each other.

// Bounds on the guide: a schema listed in full, and the whole guide (past
// it, tools are listed by name and description only).
const (
	maxGuideSchema = 8 << 10
	maxGuide       = 64 << 10
)

// toolGuide is the instructions section that describes the session's
// client tools ("" without tools).
func toolGuide(h *toolhost.Host) string {
	if h == nil || len(h.Offered()) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Tools\n\nThis conversation's tools are on the MCP server %q. Call one with %s: ServerName %q, ToolName the tool's name, "+
		"Arguments an object that matches its input schema. Use these tools, and no others, for whatever the task needs.\n", serverName, callMCPTool, serverName)
	if p := h.Parallel(); p != "" {
		fmt.Fprintf(&b, "\nTo make several calls that do not depend on each other's results, make them in one call of the tool %q on the same server, "+
			"with Arguments {\"calls\": [{\"tool\": NAME, \"arguments\": {...}}, ...]}: they run together, and its answer holds every result, in the order of the calls.\n", p)
	}
	for _, o := range h.Offered() {
		var one strings.Builder
		fmt.Fprintf(&one, "\n## %s\n", o.Name)
		if d := strings.TrimSpace(o.Tool.Description); d != "" {
			one.WriteString(d + "\n")
		}
		schema := compactSchema(o.Tool.InputSchema)
		if len(schema) > maxGuideSchema {
			schema = "(too long to list here; the server's tools/list has it)"
		}
		if schema != "" {
			one.WriteString("Input schema: " + schema + "\n")
		}
		if b.Len()+one.Len() > maxGuide {
			fmt.Fprintf(&b, "\n## %s\n(described by the server's tools/list)\n", o.Name)
			continue
		}
		b.WriteString(one.String())
	}
	return b.String()
}

// compactSchema is a schema as one line of JSON.
func compactSchema(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	out, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}
