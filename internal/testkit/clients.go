package testkit

import (
	"encoding/json"
	"strings"
)

// The prefix under which the CLI offers a client's tools to the model.
const clientToolPrefix = "mcp__c__"

// ClientResponder answers the way real coding clients are tried against
// the fake upstream: a request whose last user text holds USE_TOOL calls a
// client tool (USE_TOOL:<name> picks it, else the first one), with
// arguments built from its schema's required properties ("command" runs
// `echo mock-tool-ran`); a request answering a tool gets "done"; anything
// else "Hello from the fake upstream."
//
// SEARCH_WEB asks for a web search (as does the request Claude Code's
// WebSearch tool sends): the model calls the search tool it is offered (the CLI's own WebSearch, or a client's WebSearch as Claude
// Code's reaches the CLI), the CLI's search request is answered with one
// result titled "Fake search result", and the model's answer names it.
func ClientResponder(r Request) Reply {
	usage := Usage{InputTokens: 12, OutputTokens: 6, CacheReadInputTokens: 4}
	if r.ServerTool("web_search") != nil {
		return Reply{Search: &Search{Query: r.LastUserText(), Results: []SearchResult{{Title: "Fake search result", URL: "https://search.example/result"}}},
			Text: "The search found one page.", Usage: usage}
	}
	if LastIsToolResult(r) {
		if strings.Contains(r.AllText(), "Fake search result") {
			return Reply{Text: "Found: Fake search result (https://search.example/result)", Usage: usage}
		}
		return Reply{Text: "done", Usage: usage}
	}
	text := r.LastUserText()
	if strings.Contains(text, "SEARCH_WEB") || strings.Contains(text, "Perform a web search for the query:") {
		for _, name := range []string{"WebSearch", clientToolPrefix + "WebSearch"} {
			if r.Offers(name) {
				return Reply{ToolUses: []ToolUse{{Name: name, Input: map[string]any{"query": "fake search"}}}, Usage: usage}
			}
		}
		return Reply{Text: "No search tool.", Usage: usage}
	}
	_, after, ok := strings.Cut(text, "USE_TOOL")
	if !ok {
		return Reply{Text: "Hello from the fake upstream.", ChunkSize: 6, Usage: usage}
	}
	want := ""
	if name, ok := strings.CutPrefix(after, ":"); ok {
		want = strings.Fields(name + " ")[0]
	}
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		name, _ := tm["name"].(string)
		client, ok := strings.CutPrefix(name, clientToolPrefix)
		if !ok || (want != "" && client != want) {
			continue
		}
		return Reply{Text: "Running " + client + ".", ToolUses: []ToolUse{{Name: name, Input: argumentsFor(tm["input_schema"])}}, Usage: usage}
	}
	return Reply{Text: "No tool to use.", Usage: usage}
}

// LastIsToolResult reports whether the request's last user message holds a
// tool result: the client answers a tool call.
func LastIsToolResult(r Request) bool {
	msgs := r.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if bm, _ := b.(map[string]any); bm["type"] == "tool_result" {
				return true
			}
		}
		return false
	}
	return false
}

func argumentsFor(schema any) map[string]any {
	b, _ := json.Marshal(schema)
	var s struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(b, &s)
	args := map[string]any{}
	for _, name := range s.Required {
		switch {
		case name == "command" || name == "cmd":
			args[name] = "echo mock-tool-ran"
		case s.Properties[name]["type"] == "integer" || s.Properties[name]["type"] == "number":
			args[name] = 1
		case s.Properties[name]["type"] == "boolean":
			args[name] = false
		default:
			args[name] = "mock"
		}
	}
	return args
}
