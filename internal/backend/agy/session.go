package agy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/agy/events"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
)

// gate is the PreToolUse hook of every session: it denies each of agy's
// own tools. Meridian's clients run their own tools; agy's would act on
// this machine unasked. A hook that cannot run blocks the call too, so the
// gate fails closed; and without --dangerously-skip-permissions agy
// refuses unapproved tools headless anyway.
const gate = `{"meridian-gate":{"enabled":true,"PreToolUse":[{"matcher":"*","hooks":[{"type":"command",` +
	`"command":"printf '%s' '{\"decision\":\"deny\",\"reason\":\"this session runs no tools of its own\"}'","timeout":30}]}]}}`

// Session is one live agy process: a persistent stream-json session on
// one conversation. Turns run one at a time.
type Session struct {
	d      *Driver
	proc   subproc.Proc
	dir    string // the private session folder
	resume string // the conversation asked for, "" for a new one
	model  string

	lines      chan []byte   // stdout lines; closed when stdout ends
	exited     chan struct{} // closed once the process is joined
	stderrDone chan struct{}
	waitErr    error

	mu       sync.Mutex
	id       string        // the conversation, from init
	init     *events.Init  // nil until init came
	prev     *events.Usage // the conversation's totals after the last turn
	stderr   strings.Builder
	softDeny atomic.Bool // agy's stderr carried its headless auto-deny notice
	replaced atomic.Bool // agy did not know the conversation asked for
	dead     atomic.Bool
	closed   sync.Once
}

// Start launches agy for one conversation. It returns once the process
// runs; init is read before the first turn.
func (d *Driver) Start(ctx context.Context, opts backend.StartOptions) (backend.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.ready(ctx); err != nil {
		return nil, err
	}
	path, err := d.Locate()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.cfg.SessionRoot, 0o700); err != nil {
		return nil, fmt.Errorf("agy session folder: %w", err)
	}
	dir, err := os.MkdirTemp(d.cfg.SessionRoot, "session-")
	if err != nil {
		return nil, fmt.Errorf("agy session folder: %w", err)
	}
	if err := writeGate(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	proc, err := d.cfg.Launcher.Launch(subproc.Spec{Path: path, Args: d.args(opts, dir), Env: d.env(), Dir: opts.Dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start agy: %w", err)
	}
	s := &Session{d: d, proc: proc, dir: dir, resume: opts.Resume, model: opts.Model,
		lines: make(chan []byte, 64), exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go s.readStdout()
	go s.readStderr()
	go func() {
		s.waitErr = proc.Wait()
		close(s.exited)
	}()
	return s, nil
}

// args is the recommended invocation: a persistent session, the project
// and the private session folder as workspace folders, no slash commands,
// the turn limit, the conversation to continue.
func (d *Driver) args(opts backend.StartOptions, dir string) []string {
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
	return args
}

func writeGate(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, ".agents"), 0o700); err != nil {
		return fmt.Errorf("agy session folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agents", "hooks.json"), []byte(gate), 0o600); err != nil {
		return fmt.Errorf("agy session gate: %w", err)
	}
	return nil
}

func (s *Session) readStdout() {
	defer close(s.lines)
	r := bufio.NewReaderSize(s.proc.Stdout(), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && err == nil {
			s.lines <- line[:len(line)-1]
		}
		if err != nil {
			if len(line) > 0 {
				s.d.log.Warn("agy's output broke off mid-line", "line", truncate(line, 200))
			}
			return
		}
	}
}

// readStderr keeps the tail of agy's stderr for error reports and watches
// for the notices a driver must act on.
func (s *Session) readStderr() {
	defer close(s.stderrDone)
	sc := bufio.NewScanner(s.proc.Stderr())
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "jetski: no output produced"):
			s.softDeny.Store(true)
		case strings.HasPrefix(line, "warning: conversation") && strings.HasSuffix(line, "not found"):
			s.replaced.Store(true)
		}
		s.d.log.Debug("agy stderr", "line", line)
		s.mu.Lock()
		if s.stderr.Len() < 4<<10 {
			s.stderr.WriteString(line + "\n")
		}
		s.mu.Unlock()
	}
}

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
	if s.dead.Load() {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Answer is not supported yet: agy reaches client tools through MCP.
func (s *Session) Answer(backend.ToolResult) error {
	return errors.New("agy sessions take no client tool results")
}

// awaitInit reads init. A conversation agy did not know is a stale
// session: agy started a new one, which is no continuation. agy refuses
// some starts (a model it does not know, no login) with a lone result.
func (s *Session) awaitInit(ctx context.Context) (*backend.Failure, error) {
	if s.init != nil {
		return nil, nil
	}
	exited := s.exited
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
			time.AfterFunc(50*time.Millisecond, func() { _ = s.proc.Stdout().Close() })
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

// Turn sends one user message and relays agy's answer until its result.
// agy reads no interrupt on stdin: a turn cancelled mid-way kills the
// process, and the conversation continues in a new one by its id.
func (s *Session) Turn(ctx context.Context, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	if len(in.Results) > 0 {
		return nil, errors.New("agy sessions take no client tool results")
	}
	prompt, err := promptOf(in.Content)
	if err != nil {
		return &backend.Result{Failure: &backend.Failure{Kind: backend.FailUpstream, Status: 400, Type: "invalid_request_error", Message: err.Error()}}, nil
	}
	if f, err := s.awaitInit(ctx); err != nil || f != nil {
		return &backend.Result{SessionID: s.ID(), Failure: f}, err
	}
	line, _ := json.Marshal(map[string]any{"event": "user", "message": map[string]any{
		"role": "user", "content": []map[string]string{{"type": "text", "text": prompt}}}})
	if _, err := s.proc.Stdin().Write(append(line, '\n')); err != nil {
		return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
	}
	ev := &backend.Event{Kind: backend.MessageStart, Model: s.model}
	if err := emit(ev); err != nil {
		return nil, s.abort(err)
	}
	r := &relay{s: s, emit: emit, ev: ev}
	for !r.turn.Done() {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
			}
			if err := r.take(line); err != nil {
				return nil, s.abort(err)
			}
		case <-s.exited:
			// Gone, perhaps right after its result. What it wrote is read
			// first, briefly: a child it left may hold stdout open, so EOF
			// is not awaited; the group is killed so nothing keeps writing.
			s.kill()
			if err := r.drain(); err != nil {
				return nil, err
			}
			if !r.turn.Done() {
				return &backend.Result{SessionID: s.ID(), Failure: s.exitFailure()}, nil
			}
		case <-ctx.Done():
			return nil, s.abort(ctx.Err())
		}
	}
	turn := &r.turn
	open := r.open
	if steps := turn.UnknownSteps(); len(steps) > 0 {
		s.d.log.Info("agy wrote steps of types not known here; ignored them", "types", steps)
	}
	o := turn.Outcome(s.prev, s.softDeny.Swap(false))
	s.prev = &o.Cumulative
	res := &backend.Result{SessionID: s.ID(), StopReason: "end_turn", Usage: o.Usage.BackendUsage(), Model: s.model, Text: o.Text, Failure: o.Failure,
		// agy continues only where a conversation ends; the pin names that
		// end by its turn count.
		Pin: fmt.Sprintf("%s#%d", s.ID(), r.turn.Turns())}
	if o.Failure != nil {
		return res, nil
	}
	if open {
		*ev = backend.Event{Kind: backend.BlockStop, Index: 0}
		if err := emit(ev); err != nil {
			return nil, s.abort(err)
		}
	}
	*ev = backend.Event{Kind: backend.MessageDelta, StopReason: "end_turn", Usage: res.Usage}
	if err := emit(ev); err != nil {
		return nil, s.abort(err)
	}
	return res, nil
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
	_ = s.proc.Signal(syscall.SIGKILL)
}

// exitFailure describes a process that ended before its turn did.
func (s *Session) exitFailure() *backend.Failure {
	select {
	case <-s.exited:
	case <-time.After(s.d.cfg.ExitGrace):
	}
	select {
	case <-s.stderrDone:
	case <-time.After(s.d.cfg.ExitGrace):
	}
	s.dead.Store(true)
	msg := "agy exited"
	if s.waitErr != nil {
		msg += " (" + s.waitErr.Error() + ")"
	}
	s.mu.Lock()
	tail := strings.TrimSpace(s.stderr.String())
	s.mu.Unlock()
	if tail != "" {
		msg += ": " + tail
	}
	return &backend.Failure{Kind: backend.FailBackend, Message: msg}
}

// Close ends the session and joins its process: stdin is closed, so agy
// exits on its own; if it does not within ExitGrace its group gets
// SIGTERM, then SIGKILL after KillGrace. Its session folder goes too.
func (s *Session) Close() error {
	s.closed.Do(func() {
		s.dead.Store(true)
		_ = s.proc.Stdin().Close()
		if !s.waitExited(s.d.cfg.ExitGrace) {
			_ = s.proc.Signal(syscall.SIGTERM)
			if !s.waitExited(s.d.cfg.KillGrace) {
				_ = s.proc.Signal(syscall.SIGKILL)
				<-s.exited
			}
		}
		// A child that kept stdout open does not hold the join up.
		_ = s.proc.Signal(syscall.SIGKILL)
		_ = s.proc.Stdout().Close()
		_ = s.proc.Stderr().Close()
		for range s.lines {
		}
		<-s.stderrDone
		_ = os.RemoveAll(s.dir)
	})
	return nil
}

func (s *Session) waitExited(d time.Duration) bool {
	select {
	case <-s.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// promptOf is a user message as agy takes it: text only.
func promptOf(content []json.RawMessage) (string, error) {
	var parts []string
	for _, raw := range content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", fmt.Errorf("a content block is not JSON: %w", err)
		}
		if b.Type != "text" {
			return "", fmt.Errorf("the Antigravity backend takes text only; a %s block cannot be sent to agy", b.Type)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n\n"), nil
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// relay turns agy's lines into the gateway's events for one turn.
type relay struct {
	s    *Session
	emit func(*backend.Event) error
	ev   *backend.Event
	turn events.Turn
	open bool // the text block began
}

// take handles one stdout line. Lines that are not events, or events of
// kinds not known here, are logged and skipped: agy adds kinds between
// versions.
func (r *relay) take(line []byte) error {
	e, err := events.Parse(line)
	if err != nil {
		r.s.d.log.Warn("agy wrote a line that is not an event; ignoring it", "line", truncate(line, 200), "err", err)
		return nil
	}
	if !e.Known() {
		r.s.d.log.Info("agy wrote an event of a kind not known here; ignoring it", "kind", e.Kind)
		return nil
	}
	delta := r.turn.Add(e)
	if delta == "" {
		return nil
	}
	if !r.open {
		r.open = true
		*r.ev = backend.Event{Kind: backend.BlockStart, Index: 0, BlockType: "text", Block: json.RawMessage(`{"type":"text","text":""}`)}
		if err := r.emit(r.ev); err != nil {
			return err
		}
	}
	d, _ := json.Marshal(map[string]string{"type": "text_delta", "text": delta})
	*r.ev = backend.Event{Kind: backend.BlockDelta, Index: 0, DeltaType: "text_delta", Delta: d, Text: delta}
	if err := r.emit(r.ev); err != nil {
		return err
	}
	*r.ev = backend.Event{Kind: backend.Flush}
	return r.emit(r.ev)
}

// drain takes what an exited process left in the pipe, until the turn is
// done, the pipe ends, or nothing more comes for a moment.
func (r *relay) drain() error {
	for !r.turn.Done() {
		select {
		case line, ok := <-r.s.lines:
			if !ok {
				return nil
			}
			if err := r.take(line); err != nil {
				return err
			}
		case <-time.After(50 * time.Millisecond):
			return nil
		}
	}
	return nil
}
