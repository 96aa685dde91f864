package testkit

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ResponsesClientScript answers real clients through meridian's codex
// backend as ClientResponder does on the Anthropic side: a plain prompt
// gets a hello; a prompt holding USE_TOOL[:NAME] calls that client tool
// (offered by codex in the mcp__meridian namespace) with arguments made
// up from its schema; a tool's output gets "done: " and the output.
func ResponsesClientScript(_ int, body map[string]any) ResponsesReply {
	input, _ := body["input"].([]any)
	if len(input) > 0 {
		if last, _ := input[len(input)-1].(map[string]any); last["type"] == "function_call_output" {
			out, _ := json.Marshal(last["output"])
			return ResponsesReply{Text: []string{"done: ", string(out)}}
		}
	}
	text := lastUserInput(input)
	_, after, ok := strings.Cut(text, "USE_TOOL")
	if !ok {
		return ResponsesReply{Text: []string{"Hello ", "from the ", "fake upstream."}}
	}
	want := ""
	if name, ok := strings.CutPrefix(after, ":"); ok {
		want = strings.Fields(name + " ")[0]
	}
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		ns, _ := t.(map[string]any)
		if ns["type"] != "namespace" || ns["name"] != "mcp__meridian" {
			continue
		}
		inner, _ := ns["tools"].([]any)
		for _, it := range inner {
			tm, _ := it.(map[string]any)
			name, _ := tm["name"].(string)
			if want != "" && name != want {
				continue
			}
			args, _ := json.Marshal(argumentsFor(tm["parameters"]))
			return ResponsesReply{Text: []string{"Running " + name + "."},
				Calls: []ResponsesCall{{Name: name, Namespace: "mcp__meridian", Arguments: string(args)}}}
		}
	}
	return ResponsesReply{Text: []string{fmt.Sprintf("No tool %q to use.", want)}}
}

// lastUserInput is the text of the last user message in a Responses
// input.
func lastUserInput(input []any) string {
	for i := len(input) - 1; i >= 0; i-- {
		m, _ := input[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		var b strings.Builder
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			if pm, _ := p.(map[string]any); pm["type"] == "input_text" {
				t, _ := pm["text"].(string)
				b.WriteString(t)
			}
		}
		return b.String()
	}
	return ""
}
