package agy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy/events"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
	"github.com/meridian-gw/meridian/internal/backend/workdir"
)

// denyAll is the PreToolUse hook of a session when the driver has no gate
// command: it denies each of agy's own tools. Meridian's clients run their own tools;
// agy's would act on this machine unasked. A hook that cannot run blocks
// the call too, so the gate fails closed; and without
// --dangerously-skip-permissions agy refuses unapproved tools headless
// anyway.
const denyAll = `{"meridian-gate":{"enabled":true,"PreToolUse":[{"matcher":"*","hooks":[{"type":"command",` +
	`"command":"printf '%s' '{\"decision\":\"deny\",\"reason\":\"this session runs no tools of its own\"}'","timeout":30}]}]}}`

// schemaFile, in a session's folder, is the output schema agy enforces.
const schemaFile = "output-schema.json"

// Session is one live agy process: a persistent stream-json session on
// one conversation. Turns run one at a time. Its lifecycle (readers,
// exit, staged close) is subproc's, as claude's is.
type Session struct {
	d      *Driver
	sp     *subproc.Process
	wd     *workdir.Dir
	dir    string // the private session folder (wd's)
	resume string // the conversation asked for, "" for a new one
	model  string

	lines    chan []byte   // stdout lines; closed when stdout ends
	stopping chan struct{} // closed when Close begins: lines are dropped

	mu       sync.Mutex
	id       string        // the conversation, from init
	init     *events.Init  // nil until init came
	prev     *events.Usage // the conversation's totals after the last turn
	agyError string        // the turn's last AGY_ERROR line
	// agyErrorSeen wakes a failed turn waiting for that line.
	agyErrorSeen chan struct{}
	softDeny     atomic.Bool // agy's stderr carried its headless auto-deny notice
	replaced     atomic.Bool // agy did not know the conversation asked for
	dead         atomic.Bool
	closed       sync.Once

	// Client tools: the session's MCP endpoint (nil without tools), the
	// turn paused for their results, and the calls handed out, by
	// tool_use id.
	tools  *endpoint
	paused *relay
	calls  toolhost.Held

	// attached are the files the session's turns attached, which its gate
	// lets view_file read (under mu).
	attached []string
}

// Start launches agy for one conversation. It returns once the process
// runs and agy was found ready, by a check of this start's own (shared
// only with starts at the same time). While the last check passed, agy
// starts during the check, which then costs no time of its own; otherwise
// the check comes first, so a signed-out agy, which would sit on its
// login prompt, is never started. init is read before the first turn.
func (d *Driver) Start(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ready, passed, err := d.beginReady()
	if err != nil {
		return nil, err
	}
	if !passed {
		if err := ready(ctx); err != nil {
			return nil, err
		}
	}
	s, err := d.launch(opts)
	if err != nil {
		return nil, err
	}
	if err := ready(ctx); err != nil {
		s.kill() // signed out since: it would sit on its login prompt
		s.Close()
		return nil, err
	}
	return s, nil
}

// launch starts agy's process for a session in a new private folder.
func (d *Driver) launch(opts backend.StartOptions) (*Session, error) {
	path, err := d.Locate()
	if err != nil {
		return nil, err
	}
	wd, err := workdir.Make(d.cfg.SessionRoot, "session-")
	if err != nil {
		return nil, fmt.Errorf("agy: %w", err)
	}
	dir := wd.Path
	tools, err := d.sessionFiles(dir, opts)
	if err != nil {
		_ = wd.Remove()
		return nil, err
	}
	env, err := d.sessionEnv()
	if err != nil {
		_ = wd.Remove()
		return nil, err
	}
	s := &Session{d: d, wd: wd, dir: dir, resume: opts.Resume, model: opts.Model, tools: tools,
		lines: make(chan []byte, 64), stopping: make(chan struct{}), agyErrorSeen: make(chan struct{}, 1)}
	// agy inherits the folder's lock: a gateway killed -9 leaves the
	// folder held until agy and what it started are gone too.
	s.sp, err = subproc.Start(d.cfg.Launcher, subproc.Spec{Path: path, Args: d.args(opts, dir, d.cfg.GateCommand != ""), Env: env, Dir: opts.Dir,
		Inherit: []*os.File{wd.Lock()}},
		subproc.Options{Name: "agy", ExitGrace: d.cfg.ExitGrace, KillGrace: d.cfg.KillGrace, Log: d.log,
			Line: s.stdoutLine, StdoutEnd: func() { close(s.lines) }, Stderr: s.stderrLine})
	if err != nil {
		_ = wd.Remove()
		return nil, fmt.Errorf("start agy: %w", err)
	}
	if tools != nil {
		d.cfg.Endpoints.add(tools)
	}
	return s, nil
}

// args is the recommended invocation: a persistent session, the project
// and the private session folder as workspace folders, no slash commands,
// the turn limit, the conversation to continue. A gated session skips
// agy's permission prompts, which headless would refuse every MCP call
// and file read: its gate is the one that decides.
func (d *Driver) args(opts backend.StartOptions, dir string, gated bool) []string {
	args := []string{"--input-format", "stream-json", "--output-format", "stream-json",
		"--disable-slash-commands", "--log-file", filepath.Join(dir, "agy.log"),
		"--print-timeout", d.cfg.TurnTimeout.String(), "--add-dir", dir}
	if opts.Dir != "" {
		args = append(args, "--add-dir", opts.Dir)
	}
	if opts.Model != "" {
		args = append(args, "--model", opts.Model)
	}
	if opts.Resume != "" {
		args = append(args, "--conversation", opts.Resume)
	}
	if len(opts.JSONSchema) > 0 {
		args = append(args, "--json-schema", filepath.Join(dir, schemaFile))
	}
	if gated {
		args = append(args, "--dangerously-skip-permissions")
	}
	return args
}

// sessionFiles writes the session folder: the client's system prompt (and
// a guide to its tools) as its AGENTS.md, and in .agents the hooks (the gate, which lets view_file
// read the turns' attachments, or with no gate command denyAll) and, with
// client tools, the MCP server config and where the gate asks. It returns
// the tools' endpoint, nil without tools.
func (d *Driver) sessionFiles(dir string, opts backend.StartOptions) (*endpoint, error) {
	tools := opts.Tools
	agents := filepath.Join(dir, ".agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		return nil, fmt.Errorf("agy session folder: %w", err)
	}
	if len(opts.JSONSchema) > 0 {
		// A file, not the argument itself: a schema can be long, and agy
		// reads either.
		if err := os.WriteFile(filepath.Join(dir, schemaFile), opts.JSONSchema, 0o600); err != nil {
			return nil, fmt.Errorf("agy session schema: %w", err)
		}
	}
	hooks := []byte(denyAll)
	if d.cfg.GateCommand != "" {
		// The gate lets view_file read the files the turns attach, and
		// nothing else: without gate.json it asks nobody.
		hooks, _ = json.Marshal(map[string]any{"meridian-gate": map[string]any{"enabled": true,
			"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": d.cfg.GateCommand, "timeout": 60}}}}}})
	}
	var e *endpoint
	if len(tools) > 0 {
		url := d.cfg.Endpoints.base()
		if url == "" || d.cfg.GateCommand == "" {
			return nil, fmt.Errorf("%w: client tools need the gateway's MCP endpoint and tool gate, and this agy driver has neither", backend.ErrUnavailable)
		}
		var err error
		if e, err = newEndpoint(tools); err != nil {
			return nil, err
		}
		base := url + "/" + e.Token
		mcpConfig, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{serverName: map[string]any{"serverUrl": base + "/mcp"}}})
		if err := os.WriteFile(filepath.Join(agents, "mcp_config.json"), mcpConfig, 0o600); err != nil {
			return nil, fmt.Errorf("agy session MCP config: %w", err)
		}
		if err := writeGateFile(dir, base); err != nil {
			return nil, err
		}
		hooks, _ = json.Marshal(map[string]any{"meridian-gate": map[string]any{"enabled": true,
			"PreToolUse": []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": d.cfg.GateCommand, "timeout": 60}}}},
			// Steering the client sends beside tool results reaches the
			// model as a user message before its next call.
			"PreInvocation": []any{map[string]any{"type": "command", "command": d.cfg.GateCommand + " --steer", "timeout": 30}}}})
	}
	if err := os.WriteFile(filepath.Join(agents, "hooks.json"), hooks, 0o600); err != nil {
		return nil, fmt.Errorf("agy session gate: %w", err)
	}
	if err := writeGrants(dir, d.cfg.Allow, nonEmpty(dir, opts.Dir)); err != nil {
		return nil, err
	}
	system := opts.System
	if e != nil {
		system = append(slices.Clone(system), toolGuide(e.Host))
	}
	if err := writeInstructions(dir, system); err != nil {
		return nil, err
	}
	return e, nil
}

// stdoutLine hands a stdout line to the turn that reads it; once Close
// began, nobody does.
func (s *Session) stdoutLine(line []byte, _ bool) {
	select {
	case s.lines <- bytes.Clone(line):
	case <-s.stopping:
	}
}

// stderrLine watches agy's stderr for the notices a driver must act on;
// subproc keeps its tail for error reports.
func (s *Session) stderrLine(b []byte) {
	line := string(b)
	switch {
	case strings.HasPrefix(line, "jetski: no output produced"):
		s.softDeny.Store(true)
	case strings.HasPrefix(line, "warning: conversation") && strings.HasSuffix(line, "not found"):
		s.replaced.Store(true)
	case strings.HasPrefix(line, events.AGYErrorPrefix):
		s.d.log.Warn("agy reported an error", "line", truncate(b, 500))
		s.mu.Lock()
		s.agyError = truncate(b, 4<<10)
		s.mu.Unlock()
		select {
		case s.agyErrorSeen <- struct{}{}:
		default:
		}
	}
	s.d.log.Debug("agy stderr", "line", line)
}

// writeInstructions gives agy the client's system prompt: agy reads the
// AGENTS.md of every --add-dir folder as standing instructions, and the
// session folder is one of them. Every process of a conversation writes
// it again, so a resumed or replayed conversation keeps its instructions.
func writeInstructions(dir string, system []string) error {
	var parts []string
	for _, p := range system {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(strings.Join(parts, "\n\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("agy session instructions: %w", err)
	}
	return nil
}

// Pid is agy's process id.
func (s *Session) Pid() int { return s.sp.Pid() }

// Dir is the session's private folder: its gate, and agy's log.
func (s *Session) Dir() string { return s.dir }

// ID is the conversation's id once agy named it.
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// Alive reports whether the session can take a turn.
func (s *Session) Alive() bool {
	return !s.dead.Load() && !s.sp.Gone()
}

// awaitInit reads init. A conversation agy did not know is a stale
// session: agy started a new one, which is no continuation. agy refuses
// some starts (a model it does not know, no login) with a lone result.
func (s *Session) awaitInit(ctx context.Context) (*backend.Failure, error) {
	if s.init != nil {
		return nil, nil
	}
	exited := s.sp.Exited()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return s.exitFailure(), nil
			}
			if f, done := s.takeInit(line); done {
				return f, nil
			}
		case <-exited:
			// Gone: what it wrote before is still read, but EOF is not
			// awaited (a child may hold stdout).
			s.kill()
			exited = nil
			s.sp.CloseStdoutSoon(50 * time.Millisecond)
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		}
	}
}

// takeInit reads one line before init: init itself (done), a lone result
// refusing the start (done, its failure), or anything else (skipped).
func (s *Session) takeInit(line []byte) (*backend.Failure, bool) {
	ev, err := events.Parse(line)
	switch {
	case err == nil && ev.Result != nil:
		return events.Classify(ev.Result.Error), true
	case err != nil || ev.Kind != events.KindInit:
		s.d.log.Warn("agy wrote something before its init; ignoring it", "line", truncate(line, 200), "err", err)
		return nil, false
	}
	s.mu.Lock()
	s.init, s.id = ev.Init, ev.ConversationID
	s.mu.Unlock()
	if s.init.Model != "" {
		s.model = s.init.Model
	}
	if s.resume != "" && (ev.ConversationID != s.resume || s.replaced.Load()) {
		return &backend.Failure{Kind: backend.FailBackend, Code: backend.CodeStaleSession,
			Message: "agy has no conversation " + s.resume + " to continue"}, true
	}
	return nil, true
}

// abort ends a turn that cannot finish: agy has no interrupt, so the
// process goes, and err is returned.
func (s *Session) abort(err error) error {
	s.kill()
	return err
}

// kill ends the process group at once; Close still joins it.
func (s *Session) kill() {
	s.dead.Store(true)
	s.sp.Kill()
}

// exitFailure describes a process that ended before its turn did.
func (s *Session) exitFailure() *backend.Failure {
	msg := s.sp.ExitReport()
	s.dead.Store(true)
	return &backend.Failure{Kind: backend.FailBackend, Message: msg}
}

// Yield lowers agy to the least CPU priority: see subproc.
func (s *Session) Yield() { s.sp.Yield() }

// Close ends the session and joins its process: stdin is closed, so agy
// exits on its own; if it does not within ExitGrace its group gets
// SIGTERM, then SIGKILL after KillGrace. Its session folder goes too.
func (s *Session) Close() error {
	s.closed.Do(func() {
		s.dead.Store(true)
		s.sp.Close(func() {
			close(s.stopping)
			held := s.calls.Any()
			if held {
				// A turn waits on client tools: agy would wait on them
				// rather than read the end of its input.
				s.kill()
			}
		})
		if s.tools != nil {
			// Only now: released earlier, a held call would let agy go on
			// with the turn.
			s.d.cfg.Endpoints.remove(s.tools)
			s.tools.Close()
			s.clearCalls()
		}
		_ = s.wd.Remove()
	})
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// nonEmpty is its arguments without the empty ones.
func nonEmpty(v ...string) []string {
	return slices.DeleteFunc(v, func(s string) bool { return s == "" })
}
