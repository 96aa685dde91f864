package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/codex/appserver"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
	"github.com/meridian-gw/meridian/internal/backend/workdir"
	"github.com/meridian-gw/meridian/internal/procmem"
)

// serverName is the MCP server the client's tools are offered as: codex
// shows them upstream in the namespace mcp__meridian.
const serverName = "meridian"

// toolTimeout is codex's own bound on one client tool call: a client's
// tool may run as long as a build; the gateway's bound on paused
// sessions ends forgotten calls first.
const toolTimeout = 24 * time.Hour

// lockdown is what every app-server is started with, on top of the
// login's own config: none of codex's own tools (commands, patches,
// images, web search, agents, plugins, apps, browser, computer use,
// skills, the login shell it would run to snapshot the user's
// environment), none of the user's MCP servers, no update check, and no
// standing instructions of its own in the model's input (the client's
// system prompt is the only one).
var lockdown = []string{
	"-c", `web_search="disabled"`,
	"-c", "include_permissions_instructions=false",
	"-c", "include_environment_context=false",
	"-c", "include_apps_instructions=false",
	"-c", "check_for_update_on_startup=false",
	"-c", "skills.include_instructions=false",
	"-c", "skills.bundled.enabled=false",
	"-c", "agents.enabled=false",
	"-c", "mcp_servers={}",
	"--disable", "shell_tool", "--disable", "unified_exec", "--disable", "view_image", "--disable", "image_generation",
	"--disable", "goals", "--disable", "apps", "--disable", "plugins", "--disable", "browser_use", "--disable", "computer_use",
	"--disable", "skill_search", "--disable", "tool_suggest", "--disable", "sleep_tool", "--disable", "hooks",
	"--disable", "unbounded_connection_retries", "--disable", "shell_snapshot",
}

// Session is one live codex app-server holding one conversation's
// thread. Turns run one at a time.
type Session struct {
	d    *Driver
	sp   *subproc.Process
	conn *appserver.Conn
	wd   *workdir.Dir
	dir  string // the private working folder (wd's)
	mem  procmem.Tracker

	opts  backend.StartOptions // the contract: model, system prompt, tools, schema
	spare bool                 // started without a conversation; Bind gives it one
	model string               // what codex says answers

	thread string // the thread, once started or resumed
	turns  int
	prev   tokens // the thread's totals after the last turn

	tools  *toolhost.Host // nil without client tools
	paused *relay
	mu     sync.Mutex
	calls  toolhost.Held // handed to the client
	frozen bool

	dead   atomic.Bool
	closed sync.Once
}

// Start launches codex for one conversation; its thread starts (or
// resumes) with the first turn.
func (d *Driver) Start(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	s, err := d.launch(ctx, opts, "session-")
	if err != nil {
		return nil, err
	}
	return s, nil
}

// StartSpare launches codex ahead of need; Bind gives it its
// conversation's system prompt, tools and schema.
func (d *Driver) StartSpare(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	s, err := d.launch(ctx, opts, "session-")
	if err != nil {
		return nil, err
	}
	s.spare = true
	return s, nil
}

// Bind implements backend.Binder: a thread is started per conversation,
// so binding only records the contract the first turn starts it with.
func (s *Session) Bind(opts backend.StartOptions) error {
	if !s.spare || s.thread != "" {
		return errors.New("codex: only an unused spare is bound")
	}
	s.spare = false
	s.opts.System, s.opts.Tools, s.opts.JSONSchema = opts.System, opts.Tools, opts.JSONSchema
	return nil
}

// launch starts an app-server in a new private folder (named by prefix:
// a conversation's session, or a one-off question's ask) and initializes
// it.
func (d *Driver) launch(ctx context.Context, opts backend.StartOptions, prefix string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := d.Locate()
	if err != nil {
		return nil, err
	}
	wd, err := workdir.Make(d.cfg.SessionRoot, prefix)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	dir := wd.Path
	s := &Session{d: d, wd: wd, dir: dir, opts: opts}
	s.conn = appserver.Open(stdin{s}, d.connOptions(s.serverRequest))
	args := append([]string{"app-server"}, lockdown...)
	// codex inherits the folder's lock (see workdir).
	s.sp, err = subproc.Start(d.cfg.Launcher, subproc.Spec{Path: path, Args: args, Env: d.env(), Dir: dir, Inherit: []*os.File{wd.Lock()}},
		subproc.Options{Name: "codex", ExitGrace: d.cfg.ExitGrace, KillGrace: d.cfg.KillGrace, Log: d.log,
			Line: s.stdoutLine, StdoutEnd: func() { s.conn.End(io.EOF) }, Stderr: s.stderrLine})
	if err != nil {
		_ = wd.Remove()
		return nil, fmt.Errorf("start codex: %w", err)
	}
	s.mem = procmem.Tracker{Pid: s.sp.Pid()}
	ictx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	err = s.conn.Call(ictx, "initialize", map[string]any{"clientInfo": map[string]string{"name": "meridian", "title": "Meridian", "version": "1"}}, nil)
	if err == nil {
		err = s.conn.Notify("initialized", nil)
	}
	if err != nil {
		report := s.sp.ExitReport
		s.kill()
		s.Close()
		if errors.Is(err, appserver.ErrClosed) {
			return nil, fmt.Errorf("codex app-server did not start: %s", report())
		}
		return nil, fmt.Errorf("codex app-server did not start: %w", err)
	}
	return s, nil
}

// stdin writes the session's protocol lines to codex.
type stdin struct{ s *Session }

func (w stdin) Write(b []byte) (int, error) {
	if err := w.s.sp.Write(context.Background(), b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// stdoutLine hands a line to the protocol; a line that is not one ends
// the session.
func (s *Session) stdoutLine(line []byte, _ bool) {
	if err := s.conn.Line(line); err != nil {
		s.d.log.Warn("codex wrote a line that is not a protocol message; ending the session", "err", err)
		s.kill()
	}
}

// stderrLine logs codex's own log lines (subproc keeps their tail for
// exit reports).
func (s *Session) stderrLine(b []byte) {
	s.d.log.Debug("codex stderr", "line", string(b))
}

// threadParams are what thread/start and thread/resume share: the
// private folder, the read-only sandbox, approvals asked (and declined),
// the client's system prompt as codex's base instructions, and the
// client's tools as this thread's one MCP server.
func (s *Session) threadParams() (map[string]any, error) {
	p := map[string]any{"cwd": s.dir, "approvalPolicy": "untrusted", "sandbox": "read-only",
		"baseInstructions": strings.Join(nonEmpty(s.opts.System), "\n\n")}
	if m := codexModel(s.opts.Model); m != "" {
		p["model"] = m
	}
	if len(s.opts.Tools) > 0 && s.tools == nil {
		if s.d.cfg.Tools.Base() == "" {
			return nil, fmt.Errorf("%w: client tools need the gateway's MCP endpoint, and this codex driver has none", backend.ErrUnavailable)
		}
		h, err := toolhost.New(s.opts.Tools, toolhost.Options{})
		if err != nil {
			return nil, err
		}
		s.tools = h
		s.d.cfg.Tools.Add(h)
	}
	if s.tools != nil {
		p["config"] = map[string]any{"mcp_servers": map[string]any{serverName: map[string]any{
			"url": s.d.cfg.Tools.URL(s.tools), "default_tools_approval_mode": "approve",
			"tool_timeout_sec": toolTimeout.Seconds(), "startup_timeout_sec": 30}}}
	}
	return p, nil
}

// ensureThread starts the conversation's thread, or resumes the one it
// continues; a thread codex has no record of is a stale session.
func (s *Session) ensureThread(ctx context.Context) (*backend.Failure, error) {
	if s.thread != "" {
		return nil, nil
	}
	p, err := s.threadParams()
	if err != nil {
		return nil, err
	}
	var out struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	method := "thread/start"
	if s.opts.Resume != "" {
		method = "thread/resume"
		p["threadId"], p["excludeTurns"] = threadOf(s.opts.Resume), true
	}
	if err := s.conn.Call(ctx, method, p, &out); err != nil {
		var e *appserver.Error
		if method == "thread/resume" && errors.As(err, &e) {
			return &backend.Failure{Kind: backend.FailBackend, Code: backend.CodeStaleSession,
				Message: "codex has no thread " + threadOf(s.opts.Resume) + " to continue: " + e.Message}, nil
		}
		if errors.Is(err, appserver.ErrClosed) {
			return s.exitFailure(), nil
		}
		return nil, fmt.Errorf("codex %s: %w", method, err)
	}
	s.thread, s.model = out.Thread.ID, out.Model
	return nil, nil
}

// codexModel is the model a thread asks for: a request naming another
// vendor's model (a Claude client's default, say) gets codex's own
// default.
func codexModel(m string) string {
	l := strings.ToLower(m)
	if m == "" || strings.HasPrefix(l, "claude") || strings.HasPrefix(l, "gemini") {
		return ""
	}
	return m
}

// threadOf is the thread a pin names (thread#turns).
func threadOf(pin string) string {
	id, _, _ := strings.Cut(pin, "#")
	return id
}

func nonEmpty(parts []string) []string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ID is the thread once started.
func (s *Session) ID() string { return s.thread }

// Alive reports whether the session can take a turn.
func (s *Session) Alive() bool { return !s.dead.Load() && !s.sp.Gone() }

// Pid is codex's process id.
func (s *Session) Pid() int { return s.sp.Pid() }

// Dir is the session's private working folder.
func (s *Session) Dir() string { return s.dir }

// Yield lowers codex to the least CPU priority: see subproc.
func (s *Session) Yield() { s.sp.Yield() }

// Memory implements backend.Measurer: codex's proportional set size (the
// binary's pages it shares with other codex processes counted once).
func (s *Session) Memory() (int64, error) {
	if n, ok := s.mem.Read(); ok {
		return n, nil
	}
	return 0, errors.New("codex memory: not reported")
}

// Freeze implements backend.Freezer: a waiting app-server is stopped.
func (s *Session) Freeze() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused != nil {
		return errors.New("codex: a session in a turn is not frozen")
	}
	if err := s.sp.Signal(procgroup.Freeze); err != nil {
		return fmt.Errorf("freeze codex: %w", err)
	}
	s.frozen = true
	return nil
}

// Thaw implements backend.Freezer.
func (s *Session) Thaw() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.frozen {
		return nil
	}
	s.frozen = false
	if err := s.sp.Signal(procgroup.Thaw); err != nil {
		return fmt.Errorf("thaw codex: %w", err)
	}
	return nil
}

// Settle implements backend.Freezer: codex's start-up work (its MCP
// connections, its first rate-limit read) is done by the first turn.
func (s *Session) Settle() time.Duration { return 0 }

// kill ends the process group at once; Close still joins it.
func (s *Session) kill() {
	s.dead.Store(true)
	s.sp.Kill()
}

// exitFailure describes a process that ended before its turn did.
func (s *Session) exitFailure() *backend.Failure {
	s.dead.Store(true)
	return &backend.Failure{Kind: backend.FailBackend, Message: s.sp.ExitReport()}
}

// Close ends the session and joins its process: stdin is closed, so
// codex exits on its own; if it does not within ExitGrace its group gets
// SIGTERM, then SIGKILL. Its client tools' server and its folder go too.
func (s *Session) Close() error {
	s.closed.Do(func() {
		s.dead.Store(true)
		s.sp.Close(func() {
			s.conn.Drop()
			s.mu.Lock()
			frozen, held := s.frozen, s.calls.Any()
			s.frozen = false
			s.mu.Unlock()
			if frozen {
				_ = s.sp.Signal(procgroup.Thaw)
			}
			if held {
				// A turn waits on client tools: released, codex would
				// go on with the turn instead of reading its input's end.
				s.kill()
			}
		})
		<-s.conn.Done()
		if s.tools != nil {
			s.d.cfg.Tools.Remove(s.tools)
			s.tools.Close()
		}
		s.calls.Release()
		_ = s.wd.Remove()
	})
	return nil
}

// serverRequest answers what codex asks of its client: every approval is
// declined (the model's actions on this machine are not Meridian's to
// grant), and every other request is refused.
func (s *Session) serverRequest(_ context.Context, method string, params json.RawMessage) (any, error) {
	answer, err := refuse(method)
	s.d.log.Info("codex asked for something a gateway session does not grant; refused", "method", method, "thread", s.thread)
	return answer, err
}
