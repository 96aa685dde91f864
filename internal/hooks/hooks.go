// Package hooks runs the operator's request hooks: a command, or a
// WebAssembly module run in process, that reads a model request or its
// answer as JSON and either observes it or returns it changed. Every run
// is bounded in time and size, and a hook that fails, hangs or answers
// too much fails its request (closed), with an error naming the hook.
package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The stages a hook runs at.
const (
	StageRequest = "request"
	StageAnswer  = "answer"
)

// The modes of a hook.
const (
	ModeObserve   = "observe"
	ModeTransform = "transform"
)

// APIs are the APIs a hook may be limited to.
var APIs = []string{"messages", "count_tokens", "chat", "responses"}

// Bounds of a hook run.
const (
	DefaultTimeout    = 2 * time.Second
	MaxTimeout        = time.Minute
	DefaultMaxBytes   = 4 << 20
	DefaultConcurrent = 8
	DefaultMemoryMiB  = 128
)

// Spec is one hook as the settings file names it.
type Spec struct {
	Name  string
	Stage string
	Mode  string
	// Command is the program and its arguments, run without a shell;
	// Wasm is a WASI command module's file, run in process with Args.
	// One of the two.
	Command []string
	Wasm    string
	Args    []string
	// Env is added to the command's small environment (PATH, HOME,
	// LANG, TMPDIR), as KEY=VALUE.
	Env []string
	// APIs limits the hook to these APIs (none: all).
	APIs []string
	// Timeout bounds a run, waiting for a free slot included; MaxBytes
	// bounds what the hook reads and what it writes; Concurrent bounds
	// how many of its runs go at once; MemoryMiB bounds a module's memory.
	Timeout    time.Duration
	MaxBytes   int
	Concurrent int
	MemoryMiB  int
}

// check fills in a spec's defaults and reports what makes it unusable.
func (s *Spec) check() error {
	if s.Name == "" || strings.ContainsAny(s.Name, " \t\r\n\"") {
		return fmt.Errorf("a hook needs a name without spaces or quotes (got %q)", s.Name)
	}
	if s.Stage != StageRequest && s.Stage != StageAnswer {
		return fmt.Errorf("hook %s: stage %q is neither %q nor %q", s.Name, s.Stage, StageRequest, StageAnswer)
	}
	s.Mode = cmp.Or(s.Mode, ModeObserve)
	if s.Mode != ModeObserve && s.Mode != ModeTransform {
		return fmt.Errorf("hook %s: mode %q is neither %q nor %q", s.Name, s.Mode, ModeObserve, ModeTransform)
	}
	if (len(s.Command) == 0) == (s.Wasm == "") {
		return fmt.Errorf("hook %s: give it a command or a wasm module, one of the two", s.Name)
	}
	if len(s.Command) > 0 && len(s.Args) > 0 {
		return fmt.Errorf("hook %s: args are for a wasm module; a command's arguments follow it in command", s.Name)
	}
	for _, api := range s.APIs {
		if !slices.Contains(APIs, api) {
			return fmt.Errorf("hook %s: api %q is none of %s", s.Name, api, strings.Join(APIs, ", "))
		}
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("hook %s: env %q is not KEY=VALUE", s.Name, kv)
		}
	}
	s.Timeout = cmp.Or(s.Timeout, DefaultTimeout)
	if s.Timeout < 0 || s.Timeout > MaxTimeout {
		return fmt.Errorf("hook %s: timeout %s is not between 0 and %s", s.Name, s.Timeout, MaxTimeout)
	}
	s.MaxBytes = cmp.Or(s.MaxBytes, DefaultMaxBytes)
	s.Concurrent = cmp.Or(s.Concurrent, DefaultConcurrent)
	s.MemoryMiB = cmp.Or(s.MemoryMiB, DefaultMemoryMiB)
	if s.MaxBytes < 0 || s.Concurrent < 0 || s.MemoryMiB < 0 || s.MemoryMiB > 4096 {
		return fmt.Errorf("hook %s: max_bytes, concurrent and memory_mib must be positive (memory_mib at most 4096)", s.Name)
	}
	return nil
}

// runner runs a hook once: in is what it reads, out what it wrote (at
// most max bytes, else an error).
type runner interface {
	run(ctx context.Context, in []byte, max int) (out, stderr []byte, err error)
	close(ctx context.Context) error
}

// hook is a checked spec with its runner and its slots.
type hook struct {
	Spec
	runner runner
	slots  chan struct{}
}

func (h *hook) serves(api string) bool { return len(h.APIs) == 0 || slices.Contains(h.APIs, api) }

// Config configures Open.
type Config struct {
	Specs []Spec
	// CacheDir keeps compiled modules between starts ("": none kept).
	CacheDir string
	// Environ is meridian's environment, of which commands get PATH,
	// HOME, LANG, LC_ALL, TMPDIR and TZ.
	Environ []string
	Logger  *slog.Logger
}

// Hooks are the hooks of one meridian, in the order the settings give.
type Hooks struct {
	request, answer []*hook
	log             *slog.Logger
	// late are observers of streamed answers, run after the stream ended;
	// Close joins them.
	late sync.WaitGroup
}

// Open checks the specs and makes their runners ready: a command must be
// found, a module must compile. Nil specs give nil Hooks, which run
// nothing.
func Open(ctx context.Context, cfg Config) (*Hooks, error) {
	if len(cfg.Specs) == 0 {
		return nil, nil
	}
	h := &Hooks{log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	names := map[string]bool{}
	for _, s := range cfg.Specs {
		if err := s.check(); err != nil {
			_ = h.Close(ctx)
			return nil, err
		}
		if names[s.Name] {
			_ = h.Close(ctx)
			return nil, fmt.Errorf("two hooks are named %s", s.Name)
		}
		names[s.Name] = true
		var r runner
		var err error
		if s.Wasm != "" {
			r, err = newModule(ctx, s, cfg.CacheDir)
		} else {
			r, err = newCommand(s, cfg.Environ)
		}
		if err != nil {
			_ = h.Close(ctx)
			return nil, fmt.Errorf("hook %s: %w", s.Name, err)
		}
		hk := &hook{Spec: s, runner: r, slots: make(chan struct{}, s.Concurrent)}
		if s.Stage == StageRequest {
			h.request = append(h.request, hk)
		} else {
			h.answer = append(h.answer, hk)
		}
	}
	return h, nil
}

// Close waits for the observers of streams still running, then frees the
// runners.
func (h *Hooks) Close(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.late.Wait()
	var errs []error
	for _, hk := range slices.Concat(h.request, h.answer) {
		errs = append(errs, hk.runner.close(ctx))
	}
	return errors.Join(errs...)
}

// Has reports whether any hook runs at stage for api.
func (h *Hooks) Has(stage, api string) bool {
	if h == nil {
		return false
	}
	for _, hk := range h.stage(stage) {
		if hk.serves(api) {
			return true
		}
	}
	return false
}

// Transforms reports whether any answer hook for api may change it: such
// answers are held whole until the hooks ran.
func (h *Hooks) Transforms(api string) bool {
	if h == nil {
		return false
	}
	for _, hk := range h.answer {
		if hk.serves(api) && hk.Mode == ModeTransform {
			return true
		}
	}
	return false
}

// MaxBytes is the most of an answer any of api's answer hooks reads.
func (h *Hooks) MaxBytes(api string) int {
	n := 0
	if h != nil {
		for _, hk := range h.answer {
			if hk.serves(api) {
				n = max(n, hk.MaxBytes)
			}
		}
	}
	return n
}

func (h *Hooks) stage(stage string) []*hook {
	if stage == StageRequest {
		return h.request
	}
	return h.answer
}

// Run runs the hooks of stage for m's API in order, each seeing what the
// one before made, and returns m as the transforms left it. The first
// failure or refusal ends the run with an *Error.
func (h *Hooks) Run(ctx context.Context, stage string, m Message) (Message, error) {
	if h == nil {
		return m, nil
	}
	for _, hk := range h.stage(stage) {
		if !hk.serves(m.API) {
			continue
		}
		var err error
		if m, err = h.runOne(ctx, hk, stage, m); err != nil {
			return m, err
		}
	}
	return m, nil
}

// Observe runs the observers of a streamed answer in the background, once
// it has ended: nobody waits for them, and a failure is only logged. The
// transforms of the stage do not run on a stream.
func (h *Hooks) Observe(ctx context.Context, m Message) {
	if h == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	h.late.Go(func() {
		for _, hk := range h.answer {
			if !hk.serves(m.API) || hk.Mode != ModeObserve {
				continue
			}
			if _, err := h.runOne(ctx, hk, StageAnswer, m); err != nil {
				h.log.WarnContext(ctx, "a hook failed on a streamed answer, which it could not stop", "hook", hk.Name, "err", err)
			}
		}
	})
}

// runOne runs one hook on m within its bounds.
func (h *Hooks) runOne(ctx context.Context, hk *hook, stage string, m Message) (Message, error) {
	start := time.Now()
	in, err := encode(&hk.Spec, stage, m)
	if err != nil {
		return m, h.failed(ctx, hk, stage, fmt.Errorf("encode: %w", err))
	}
	if len(in) > hk.MaxBytes {
		status, what := http.StatusBadGateway, "the answer"
		if stage == StageRequest {
			status, what = http.StatusRequestEntityTooLarge, "the request"
		}
		h.log.WarnContext(ctx, "a hook refused what it would read: too large", "hook", hk.Name, "bytes", len(in), "max_bytes", hk.MaxBytes)
		return m, &Error{Hook: hk.Name, Status: status,
			Message: fmt.Sprintf("%s is larger than hook %s takes (%d bytes with its envelope; max_bytes %d)", what, hk.Name, len(in), hk.MaxBytes)}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, hk.Timeout)
	defer cancel()
	select {
	case hk.slots <- struct{}{}:
	case <-ctx.Done():
		if parent.Err() != nil {
			return m, parent.Err() // the client left
		}
		return m, h.timedOut(ctx, hk, stage, "waiting for a free slot")
	}
	out, stderr, err := hk.runner.run(ctx, in, hk.MaxBytes)
	<-hk.slots
	if len(stderr) > 0 {
		h.log.InfoContext(ctx, "hook said", "hook", hk.Name, "stderr", string(trimTail(stderr, 2048)))
	}
	switch {
	case parent.Err() != nil:
		return m, parent.Err()
	case ctx.Err() != nil:
		return m, h.timedOut(ctx, hk, stage, "running")
	case errors.Is(err, errTooMuch):
		return m, h.failed(ctx, hk, stage, fmt.Errorf("it wrote more than max_bytes (%d)", hk.MaxBytes))
	case err != nil:
		return m, h.failed(ctx, hk, stage, err)
	}
	h.log.DebugContext(ctx, "hook ran", "hook", hk.Name, "stage", stage, "took", time.Since(start).Round(time.Microsecond))
	if hk.Mode == ModeObserve {
		return m, nil
	}
	changed, err := apply(hk.Name, out, m)
	var refused *Error
	switch {
	case errors.As(err, &refused):
		h.log.InfoContext(ctx, "a hook refused a request", "hook", hk.Name, "status", refused.Status)
		return m, err
	case err != nil:
		return m, h.failed(ctx, hk, stage, err)
	}
	return changed, nil
}

// failed is a hook's failure as the client hears it (502, naming the
// hook); the log has the cause, which may name files.
func (h *Hooks) failed(ctx context.Context, hk *hook, stage string, err error) error {
	h.log.WarnContext(ctx, "a hook failed; its request fails with it", "hook", hk.Name, "stage", stage, "err", err)
	return &Error{Hook: hk.Name, Status: http.StatusBadGateway,
		Message: fmt.Sprintf("%s hook %s failed, so meridian did not go on; its log says why", stage, hk.Name)}
}

func (h *Hooks) timedOut(ctx context.Context, hk *hook, stage, while string) error {
	h.log.WarnContext(ctx, "a hook did not finish in time; its request fails with it", "hook", hk.Name, "stage", stage,
		"timeout", hk.Timeout, "while", while)
	return &Error{Hook: hk.Name, Status: http.StatusGatewayTimeout,
		Message: fmt.Sprintf("%s hook %s did not finish within %s, so meridian did not go on", stage, hk.Name, hk.Timeout)}
}

// errTooMuch is a runner's error for output past its bound.
var errTooMuch = errors.New("output past max_bytes")

func trimTail(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
