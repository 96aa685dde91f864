package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// agy reaches MCP tools through its built-in call_mcp_tool. For a server
// configured by serverUrl this stand-in calls it as agy's streamable-HTTP
// client was seen to: server/discover first, initialize after "method not
// found", a session id required from initialize, a standing GET stream
// required, then tools/list and tools/call. A stateless server, or one
// answering GET with 405, fails the way agy reports it. Servers start
// with the first call here (agy starts them with the first turn).

// mcpParams is a call_mcp_tool step's parameters.
type mcpParams struct {
	ServerName string          `json:"ServerName"`
	ToolName   string          `json:"ToolName"`
	Arguments  json.RawMessage `json:"Arguments"`
}

// serverURL finds a server's serverUrl in the MCP configs agy reads: the
// global one under $HOME and each --add-dir folder's .agents one.
func (s *session) serverURL(name string) string {
	files := []string{filepath.Join(os.Getenv("HOME"), ".gemini", "config", "mcp_config.json")}
	for _, d := range s.o.addDirs {
		files = append(files, filepath.Join(d, ".agents", "mcp_config.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var cfg struct {
			MCPServers map[string]struct {
				ServerURL string `json:"serverUrl"`
			} `json:"mcpServers"`
		}
		if json.Unmarshal(b, &cfg) == nil && cfg.MCPServers[name].ServerURL != "" {
			return cfg.MCPServers[name].ServerURL
		}
	}
	return ""
}

// callMCP runs one call_mcp_tool: the tool's text output, or the tool
// step's error.
func (s *session) callMCP(p mcpParams) (output string, errText string) {
	c, err := s.mcpServer(p.ServerName)
	if err != nil {
		return "", err.Error()
	}
	if !slices.Contains(c.tools, p.ToolName) {
		return "", fmt.Sprintf("tool %s is not enabled for server %s", p.ToolName, p.ServerName)
	}
	args := p.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := c.request("tools/call", map[string]any{"name": p.ToolName, "arguments": args})
	if err != nil {
		s.log.write(map[string]any{"mcp": "call", "tool": p.ToolName, "err": err.Error()})
		return "", err.Error()
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &r)
	var text strings.Builder
	for _, part := range r.Content {
		if part.Type == "text" {
			text.WriteString(part.Text)
		}
	}
	s.log.write(map[string]any{"mcp": "call", "tool": p.ToolName, "arguments": args, "output": text.String(), "is_error": r.IsError})
	return text.String(), ""
}

// mcpServer is the named server's session, connected at first use.
func (s *session) mcpServer(name string) (*mcpClient, error) {
	if c := s.mcp[name]; c != nil {
		return c, nil
	}
	url := s.serverURL(name)
	if url == "" {
		return nil, fmt.Errorf("MCP server %q is not configured", name)
	}
	c := &mcpClient{url: url, schemas: map[string]json.RawMessage{}}
	if err := c.connect(); err != nil {
		s.log.write(map[string]any{"mcp": "connect", "server": name, "err": err.Error()})
		return nil, err
	}
	s.log.write(map[string]any{"mcp": "connect", "server": name, "tools": c.tools})
	if s.mcp == nil {
		s.mcp = map[string]*mcpClient{}
	}
	s.mcp[name] = c
	return c, nil
}

// withArguments gives a call_mcp_tool step whose scenario left out its
// Arguments some, as a model would: built from the tool's input schema's
// required properties (a command runs `echo mock-tool-ran`), the way the
// fake upstream calls a client's tools. A call of Meridian's parallel tool
// gets the same for each of its calls that has no arguments, a call's
// "command" naming the command it runs.
func (s *session) withArguments(params json.RawMessage) json.RawMessage {
	var p mcpParams
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	if p.ToolName == parallelTool {
		return s.withPartArguments(p, params)
	}
	if len(p.Arguments) > 0 {
		return params
	}
	c, err := s.mcpServer(p.ServerName)
	if err != nil {
		return params
	}
	p.Arguments, _ = json.Marshal(c.madeUp(p.ToolName, "echo mock-tool-ran"))
	out, _ := json.Marshal(p)
	return out
}

// withPartArguments fills in the arguments of a parallel call's calls
// that have none.
func (s *session) withPartArguments(p mcpParams, params json.RawMessage) json.RawMessage {
	var in struct {
		Calls []struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
			Command   string          `json:"command,omitempty"`
		} `json:"calls"`
	}
	if json.Unmarshal(p.Arguments, &in) != nil {
		return params
	}
	var c *mcpClient
	for i, call := range in.Calls {
		if len(call.Arguments) == 0 {
			if c == nil {
				var err error
				if c, err = s.mcpServer(p.ServerName); err != nil {
					return params
				}
			}
			in.Calls[i].Arguments, _ = json.Marshal(c.madeUp(call.Tool, call.Command))
		}
		in.Calls[i].Command = ""
	}
	p.Arguments, _ = json.Marshal(in)
	out, _ := json.Marshal(p)
	return out
}

// parallelTool is the name Meridian gives its parallel tool.
const parallelTool = "parallel_calls"

// madeUp is arguments for tool from its schema's required properties, a
// command property running command.
func (c *mcpClient) madeUp(tool, command string) map[string]any {
	var schema struct {
		Required   []string                  `json:"required"`
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(c.schemas[tool], &schema)
	args := map[string]any{}
	for _, name := range schema.Required {
		switch t := schema.Properties[name]["type"]; {
		case (name == "command" || name == "cmd") && t == "array":
			args[name] = []string{"bash", "-c", command}
		case name == "command" || name == "cmd":
			args[name] = command
		case t == "integer" || t == "number":
			args[name] = 1
		case t == "boolean":
			args[name] = false
		case t == "array":
			args[name] = []string{"echo", "mock-tool-ran"}
		default:
			args[name] = "mock"
		}
	}
	return args
}

// mcpClient is one streamable-HTTP MCP session.
type mcpClient struct {
	url     string
	session string
	version string
	next    int
	tools   []string
	schemas map[string]json.RawMessage // input schemas, by tool
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

func (c *mcpClient) connect() error {
	c.version = "2026-07-28"
	_, err := c.request("server/discover", map[string]any{})
	var rerr *rpcError
	if !errors.As(err, &rerr) || rerr.Code != -32601 {
		return fmt.Errorf("failed to get tools: server/discover answered %v; this stand-in follows only the fallback agy was seen to take", err)
	}
	c.version = "2025-11-25"
	if _, err := c.request("initialize", map[string]any{"protocolVersion": c.version,
		"capabilities": map[string]any{"elicitation": map[string]any{}, "roots": map[string]any{}},
		"clientInfo":   map[string]any{"name": "antigravity-client", "version": "1.0.0"}}); err != nil {
		return fmt.Errorf("failed to get tools: %w", err)
	}
	if c.session == "" {
		return errors.New(`sending "subscriptions/listen": failed to connect (session ID: ): session not found`)
	}
	if err := c.notify("notifications/initialized"); err != nil {
		return fmt.Errorf("failed to get tools: %w", err)
	}
	if err := c.listen(); err != nil {
		return fmt.Errorf("standalone SSE stream: %w", err)
	}
	res, err := c.request("tools/list", map[string]any{})
	if err != nil {
		return fmt.Errorf("failed to get tools: %w", err)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return fmt.Errorf("failed to get tools: %w", err)
	}
	for _, t := range list.Tools {
		c.tools = append(c.tools, t.Name)
		c.schemas[t.Name] = t.InputSchema
	}
	return nil
}

// listen opens the standing GET stream and keeps reading it.
func (c *mcpClient) listen() error {
	req, _ := http.NewRequest(http.MethodGet, c.url, nil)
	c.headers(req)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		return fmt.Errorf("exceeded 5 retries without progress (GET answered %s)", resp.Status)
	}
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	return nil
}

func (c *mcpClient) headers(req *http.Request) {
	req.Header.Set("MCP-Protocol-Version", c.version)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
}

func (c *mcpClient) notify(method string) error {
	resp, err := c.post(map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", method, resp.Status)
	}
	return nil
}

// request sends one JSON-RPC request and reads its answer, as JSON or
// from an event stream.
func (c *mcpClient) request(method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	resp, err := c.post(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && c.session == "" {
		c.session = sid
	}
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	decode := func(b []byte) (*answer, bool) {
		var a answer
		if json.Unmarshal(b, &a) != nil || string(a.ID) != fmt.Sprint(id) {
			return nil, false
		}
		return &a, true
	}
	var a *answer
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		for a == nil && sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				a, _ = decode([]byte(strings.TrimSpace(data)))
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		a, _ = decode(b)
	}
	switch {
	case a == nil:
		return nil, fmt.Errorf("%s: no answer (HTTP %s)", method, resp.Status)
	case a.Error != nil:
		return nil, a.Error
	}
	return a.Result, nil
}

func (c *mcpClient) post(msg any) (*http.Response, error) {
	b, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(b))
	c.headers(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return http.DefaultClient.Do(req)
}
