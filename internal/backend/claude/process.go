package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/procmem"
)

// Process is one running claude CLI. It implements backend.Session. Its
// lifecycle (readers, exit, staged close) is subproc's, as agy's is.
type Process struct {
	d    *Driver
	proc Proc
	sp   *subproc.Process
	log  *slog.Logger
	mem  procmem.Tracker

	writeMu sync.Mutex
	wbuf    []byte

	lines    chan *line    // turn output, in order; closed when stdout ends
	stopping chan struct{} // closed when Close begins; the reader stops delivering

	tools      *toolset           // nil without client tools; replaced only by SetTools, under mu
	autonomous bool               // every permission request is granted
	search     *backend.WebSearch // the CLI's web search is enabled, under these rules

	mu        sync.Mutex
	seq       int
	pending   map[string]chan controlResponsePayload
	calls     map[string]*call // client tool calls of the turn, by tool_use id
	paused    bool             // a turn waits for client tool results
	cur       *translator      // the paused turn
	sessionID string
	inTurn    bool
	broken    error         // once set, the process takes no more turns
	listed    chan struct{} // closed when the CLI re-reads the tools SetTools set
	frozen    bool          // stopped by Freeze
	unbound   bool          // a spare: no initialize written yet
	// fresh: the conversation the process holds began here, not in a
	// resumed transcript; root is then its first message, once written.
	// last is the latest message written.
	fresh      bool
	root, last string
	// awaiting are the tool results this turn delivered that the CLI has
	// not yet shown as taken; heldAt is the message it took the last of
	// them in, where the session can be resumed with them in it.
	awaiting map[string]bool
	heldAt   string
	searches int // web searches this response asked to run
}

func newProcess(d *Driver, proc Proc) *Process {
	p := &Process{
		d:        d,
		proc:     proc,
		log:      d.log.With("pid", proc.Pid()),
		lines:    make(chan *line, 256),
		stopping: make(chan struct{}),
		mem:      procmem.Tracker{Pid: proc.Pid()},
	}
	p.sp = subproc.Watch(proc, subproc.Options{Name: "claude", ExitGrace: d.cfg.ExitGrace, KillGrace: d.cfg.KillGrace, Log: p.log,
		Line: p.dispatch, StdoutEnd: func() { close(p.lines) }, Stderr: p.stderrLine})
	return p
}

// Alive implements backend.Session.
func (p *Process) Alive() bool {
	if p.sp.Gone() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.broken == nil
}

// Pid is the CLI's process id.
func (p *Process) Pid() int { return p.proc.Pid() }

// ID implements backend.Session: the CLI's session id once it reported one.
func (p *Process) ID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessionID
}

func (p *Process) setSessionID(id string) {
	if id == "" {
		return
	}
	p.mu.Lock()
	p.sessionID = id
	p.mu.Unlock()
}

func (p *Process) nextRequestID(prefix string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return prefix + strconv.Itoa(p.seq)
}

// initialize sends the initialize control request. The system prompt goes
// here rather than on argv: an empty list element gives an empty custom
// prompt, so the client's prompt replaces Claude Code's own.
func (p *Process) initialize(system []string, schema json.RawMessage) error {
	if len(system) == 0 {
		system = []string{""}
	}
	init := initializeRequest{Subtype: "initialize", SystemPrompt: system, JSONSchema: schema}
	if p.tools != nil {
		init.SDKMCPServers = []string{mcpServer}
		init.SDKMCPServerManifests = p.tools.manifest()
	}
	return p.writeJSON(controlRequest{
		Type:      "control_request",
		RequestID: p.nextRequestID("init_"),
		Request:   init,
	})
}

// request sends a control request and waits for its response.
func (p *Process) request(ctx context.Context, prefix string, req any) (json.RawMessage, error) {
	id := p.nextRequestID(prefix)
	ch := make(chan controlResponsePayload, 1)
	p.mu.Lock()
	if p.pending == nil {
		p.pending = make(map[string]chan controlResponsePayload)
	}
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	if err := p.writeJSON(controlRequest{Type: "control_request", RequestID: id, Request: req}); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		if resp.Subtype == "error" {
			return nil, fmt.Errorf("claude refused %s: %s", prefix, resp.Error)
		}
		return resp.Response, nil
	case <-p.sp.StdoutDone():
		return nil, errors.New(p.sp.ExitReport())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// interrupt asks the CLI to end the current turn. The turn still ends with
// a result line, which the caller waits for.
func (p *Process) interrupt() error {
	return p.writeJSON(controlRequest{
		Type:      "control_request",
		RequestID: p.nextRequestID("int_"),
		Request:   interruptRequest{Subtype: "interrupt"},
	})
}

// writeJSON writes one line to the CLI's stdin.
func (p *Process) writeJSON(v any) error {
	_, err := p.writeLine(context.Background(), v)
	return err
}

// writeLine writes one line to the CLI's stdin and reports its size. When
// ctx ends mid-write, stdin is closed: the process takes no more input.
func (p *Process) writeLine(ctx context.Context, v any) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	buf := bytes.NewBuffer(p.wbuf[:0])
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline
		return 0, fmt.Errorf("encode: %w", err)
	}
	p.wbuf = buf.Bytes()
	n := len(p.wbuf)
	if err := p.sp.Write(ctx, p.wbuf); err != nil {
		return 0, err
	}
	if cap(p.wbuf) > 1<<20 {
		p.wbuf = nil // do not pin a large prompt's buffer for the process's life
	}
	return n, nil
}

// dispatch routes one stdout line: control traffic is answered here, the
// rest goes to the running turn. It runs on the stdout reader.
func (p *Process) dispatch(raw []byte, more bool) {
	if tap := p.d.cfg.Tap; tap != nil {
		_, _ = tap.Write(append(raw, '\n'))
	}
	l := new(line)
	if err := json.Unmarshal(raw, l); err != nil {
		p.log.Warn("claude wrote a line that is not JSON; ignoring it", "line", truncate(raw, 200))
		return
	}
	l.more = more
	switch l.Type {
	case "control_request":
		p.answer(l)
		return
	case "control_response":
		var resp controlResponsePayload
		if json.Unmarshal(l.Response, &resp) != nil {
			return
		}
		p.mu.Lock()
		waiter := p.pending[resp.RequestID]
		delete(p.pending, resp.RequestID)
		p.mu.Unlock()
		if waiter != nil {
			waiter <- resp
		} else if resp.Subtype == "error" {
			p.log.Warn("claude refused a control request", "request_id", resp.RequestID, "error", resp.Error)
		}
		return
	case "control_cancel_request", "keep_alive":
		return
	}
	select {
	case p.lines <- l:
	case <-p.stopping:
	}
}

// answer replies to a control request from the CLI. Client tools are
// allowed and their calls held for the client; the CLI's own tools are
// denied; hooks need nothing; anything else is refused.
func (p *Process) answer(l *line) {
	var req incomingRequest
	_ = json.Unmarshal(l.Request, &req)
	resp := responseBody{RequestID: l.RequestID}
	switch req.Subtype {
	case "mcp_message":
		p.mcpMessage(l.RequestID, req)
		return
	case "can_use_tool":
		resp.Subtype = "success"
		if req.ToolName == cliWebSearch && p.search != nil && !p.autonomous {
			if ok, input := p.searchPermission(req.Input); ok {
				resp.Response = map[string]any{"behavior": "allow", "updatedInput": input, "toolUseID": req.ToolUse}
			} else {
				resp.Response = map[string]any{"behavior": "deny", "toolUseID": req.ToolUse,
					"message": "Web search error: " + maxUsesExceeded + " (the client allows no more searches in this response)"}
			}
			break
		}
		if _, ok := p.toolset().client(req.ToolName); ok || p.autonomous {
			input := req.Input
			if len(input) == 0 {
				input = json.RawMessage(`{}`)
			}
			resp.Response = map[string]any{"behavior": "allow", "updatedInput": input, "toolUseID": req.ToolUse}
			break
		}
		resp.Response = map[string]any{
			"behavior":  "deny",
			"message":   "only the client's own tools are available in this session",
			"toolUseID": req.ToolUse,
		}
	case "hook_callback":
		resp.Subtype = "success"
		resp.Response = map[string]any{}
	default:
		resp.Subtype = "error"
		resp.Error = "unsupported control request: " + req.Subtype
	}
	if err := p.writeJSON(controlResponse{Type: "control_response", Response: resp}); err != nil {
		p.log.Debug("could not answer claude", "subtype", req.Subtype, "err", err)
	}
}

// stderrLine passes a stderr line on, to the configured writer and the
// debug log; subproc keeps its tail.
func (p *Process) stderrLine(b []byte) {
	if w := p.d.cfg.Stderr; w != nil {
		_, _ = w.Write(b)
		_, _ = w.Write([]byte{'\n'})
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("claude stderr", "line", string(b))
	}
}

// exitError describes how the process ended, for error reports.
func (p *Process) exitError() string { return p.sp.ExitReport() }

// Close ends the process and joins it: stdin is closed so the CLI exits on
// its own; if it does not within ExitGrace the group gets SIGTERM, then
// SIGKILL after KillGrace. Close returns only when the process and its
// readers are gone.
func (p *Process) Close() error {
	p.sp.Close(func() {
		close(p.stopping)
		p.mu.Lock()
		paused, frozen := p.paused, p.frozen
		p.frozen = false
		p.mu.Unlock()
		if frozen {
			// A stopped process cannot read its closed stdin and exit.
			_ = p.proc.Signal(procgroup.Thaw)
		}
		if paused {
			// The CLI waits inside a turn for tool results that will not
			// come: end the turn so it can exit.
			_ = p.interrupt()
		}
	})
	return nil
}

// Yield lowers the process to the least CPU priority: see subproc.
func (p *Process) Yield() { p.sp.Yield() }

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
