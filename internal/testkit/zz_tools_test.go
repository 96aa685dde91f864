package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestExpTools(t *testing.T) {
	mode := os.Getenv("EXPT")
	if mode == "" { t.Skip() }
	up := NewUpstream(t)
	switch mode {
	case "invalid":
		up.Enqueue(Reply{Text: "bad", ToolUses: []ToolUse{{ID: "toolu_X", Name: "mcp__client__read_file", Input: map[string]any{"path": 5}}}})
	case "single", "steer", "long":
		up.Enqueue(Reply{Text: "reading", ToolUses: []ToolUse{{ID: "toolu_A", Name: "mcp__client__read_file", Input: map[string]any{"path": "a.go"}}}})
	case "parallel":
		up.Enqueue(Reply{Text: "reading two", ToolUses: []ToolUse{{ID: "toolu_A", Name: "mcp__client__read_file", Input: map[string]any{"path": "a.go"}}, {ID: "toolu_B", Name: "mcp__client__read_file", Input: map[string]any{"path": "b.go"}}}})
	}
	up.Always(Reply{Text: "done", Usage: Usage{InputTokens: 3, OutputTokens: 1}})
	home := t.TempDir()
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--include-partial-messages", "--setting-sources=", "--tools=", "--permission-prompt-tool=stdio", "--model=my-fake-model", "--disable-slash-commands", "--strict-mcp-config"}
	cmd := exec.Command(claudeBin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + home, "HOME=" + home, "ANTHROPIC_BASE_URL=" + up.URL, "ANTHROPIC_API_KEY=dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=0", "ENABLE_TOOL_SEARCH=false"}
	cmd.Env = append(cmd.Env, strings.Fields(os.Getenv("XENV"))...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil { t.Fatal(err) }
	send := func(v any) { b, _ := json.Marshal(v); stdin.Write(append(b, '\n')); fmt.Printf("[%6dms] >>> %s\n", time.Since(start).Milliseconds(), string(b)[:min(300, len(b))]) }
	schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}
	send(map[string]any{"type": "control_request", "request_id": "init1", "request": map[string]any{"subtype": "initialize", "systemPrompt": []string{"sys"},
		"sdkMcpServers": []string{"client"},
		"sdkMcpServerManifests": map[string]any{"client": map[string]any{
			"initializeResult": map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "client", "version": "1"}},
			"toolsListResult": map[string]any{"tools": []any{map[string]any{"name": "read_file", "description": "Read a file", "inputSchema": schema}}},
		}}}})
	send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil, "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "read it"}}}})
	r := bufio.NewReaderSize(stdout, 1<<20)
	hold := 0
	if mode == "long" { hold = 100 }
	for {
		l, err := r.ReadString('\n')
		if err != nil { fmt.Println("EOF", err); break }
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		typ, _ := m["type"].(string)
		short := l
		if len(short) > 400 { short = short[:400] }
		if typ == "stream_event" { continue }
		fmt.Printf("[%6dms] %s", time.Since(start).Milliseconds(), short)
		if typ == "control_request" {
			req := m["request"].(map[string]any)
			switch req["subtype"] {
			case "can_use_tool":
				send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{"behavior": "allow", "updatedInput": req["input"], "toolUseID": req["tool_use_id"]}}})
			case "mcp_message":
				msg := req["message"].(map[string]any)
				if msg["method"] == "tools/call" {
					rid := m["request_id"]
					id := msg["id"]
					params := msg["params"].(map[string]any)
					go func() {
						if mode == "steer" {
							time.Sleep(300 * time.Millisecond)
							send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil, "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "STEER: also check tests"}}}})
						}
						time.Sleep(time.Duration(hold)*time.Second + 500*time.Millisecond)
						send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": rid, "response": map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("contents of %v", params["arguments"])}}}}}}})
					}()
				} else {
					send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": msg["id"], "result": map[string]any{}}}}})
				}
			}
		}
		if typ == "result" {
			if mode == "steer" && !strings.Contains(l, "STEERDONE") { /* wait for possibly a second result */ }
			stdin.Close()
		}
	}
	cmd.Wait()
	for i, req := range up.Requests() {
		var tools []string
		for _, tl := range req.Body["tools"].([]any) { tools = append(tools, tl.(map[string]any)["name"].(string)) }
		fmt.Printf("--- upstream %d tools=%v\n", i, tools)
		for _, m := range req.Messages() {
			b, _ := json.Marshal(m)
			s := string(b)
			if strings.Contains(s, "Environment") { continue }
			fmt.Println("   ", s[:min(len(s), 300)])
		}
	}
}
