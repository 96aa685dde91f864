package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/meridian-gw/meridian/internal/backend"
)

// mcpMessage answers a JSON-RPC message the CLI sends to the client-tools
// server. A tools/call is held until its result is known; the CLI waits
// for it, with the model's turn paused inside.
func (p *Process) mcpMessage(requestID string, req incomingRequest) {
	var msg rpcMessage
	_ = json.Unmarshal(req.Message, &msg)
	ts := p.toolset()
	if req.ServerName != mcpServer || ts == nil {
		p.rpcError(requestID, msg.ID, -32601, "no such MCP server: "+req.ServerName)
		return
	}
	switch msg.Method {
	case "tools/call":
		p.holdCall(requestID, msg)
	case "initialize":
		p.rpcResult(requestID, msg.ID, ts.initializeResult())
	case "tools/list":
		p.mu.Lock()
		listed := p.listed
		p.listed = nil
		p.mu.Unlock()
		p.rpcResult(requestID, msg.ID, map[string]any{"tools": ts.list})
		if listed != nil {
			close(listed)
		}
	default:
		if len(msg.ID) == 0 { // a notification: acknowledged, nothing to say
			p.rpcResult(requestID, json.RawMessage("0"), map[string]any{})
			return
		}
		p.rpcError(requestID, msg.ID, -32601, "method not found: "+msg.Method)
	}
}

func (p *Process) holdCall(requestID string, msg rpcMessage) {
	id := msg.Params.Meta.ToolUseID
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]*call{}
	}
	c := p.calls[id]
	if c == nil {
		c = &call{}
		p.calls[id] = c
	}
	c.requestID, c.rpcID = requestID, msg.ID
	ready := c.result != nil
	if ready {
		delete(p.calls, id)
	}
	p.mu.Unlock()
	if ready {
		p.respondCall(c)
	}
}

// Answer implements backend.Session.
func (p *Process) Answer(r backend.ToolResult) error {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string]*call{}
	}
	c := p.calls[r.ToolUseID]
	if c == nil {
		c = &call{}
		p.calls[r.ToolUseID] = c
	}
	if c.result != nil {
		p.mu.Unlock()
		return nil // answered already
	}
	c.result = &r
	ready := c.requestID != ""
	if ready {
		delete(p.calls, r.ToolUseID)
	}
	p.mu.Unlock()
	if ready {
		return p.respondCall(c)
	}
	return nil
}

func (p *Process) respondCall(c *call) error {
	return p.rpcResult(c.requestID, c.rpcID, map[string]any{
		"content": c.result.MCPContent(),
		"isError": c.result.IsError,
	})
}

// clearCalls forgets the calls of a turn that ended.
func (p *Process) clearCalls() {
	p.mu.Lock()
	p.calls = nil
	p.mu.Unlock()
}

func (p *Process) rpcResult(requestID string, id json.RawMessage, result any) error {
	return p.writeJSON(controlResponse{Type: "control_response", Response: responseBody{
		Subtype: "success", RequestID: requestID,
		Response: map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": id, "result": result}},
	}})
}

func (p *Process) rpcError(requestID string, id json.RawMessage, code int, message string) {
	_ = p.writeJSON(controlResponse{Type: "control_response", Response: responseBody{
		Subtype: "success", RequestID: requestID,
		Response: map[string]any{"mcp_response": map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": code, "message": message}}},
	}})
}

// SetTools gives an idle process a new list of client tools without
// restarting it: the CLI is told the list changed (an MCP
// notifications/tools/list_changed from our server) and reads it again,
// and SetTools returns once it has, so the next turn's request to the
// model carries the new list. A process started without client tools has
// no server to change, and one inside a turn keeps its list; both report
// backend.ErrToolsFixed and the caller starts a new process.
func (p *Process) SetTools(ctx context.Context, tools []backend.Tool) error {
	p.mu.Lock()
	if p.tools == nil || len(tools) == 0 || p.inTurn || p.paused {
		p.mu.Unlock()
		return backend.ErrToolsFixed
	}
	p.tools = newToolset(tools)
	listed := make(chan struct{})
	p.listed = listed
	p.mu.Unlock()
	msg := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	if _, err := p.request(ctx, "tl_", mcpMessageRequest{Subtype: "mcp_message", ServerName: mcpServer, Message: msg}); err != nil {
		return p.toolsLost(fmt.Errorf("tell claude the tools changed: %w", err))
	}
	select {
	case <-listed:
		return nil
	case <-p.sp.StdoutDone():
		return p.toolsLost(errors.New(p.exitError()))
	case <-ctx.Done():
		return p.toolsLost(fmt.Errorf("claude did not read the new tool list: %w", ctx.Err()))
	}
}

func (p *Process) toolset() *toolset {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tools
}

// toolsLost marks a process whose tool list is in doubt: it takes no more
// turns.
func (p *Process) toolsLost(err error) error {
	p.mu.Lock()
	if p.broken == nil {
		p.broken = err
	}
	p.listed = nil
	p.mu.Unlock()
	return err
}
