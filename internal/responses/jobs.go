package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultMaxJobs bounds background responses running at once.
const DefaultMaxJobs = 16

// ErrBusy is returned by Start when the bound of background responses is
// reached: new work is refused rather than running work evicted.
var ErrBusy = errors.New("responses: too many background responses are running")

// ErrNoLog is a stream asked of a response whose events are not kept.
var ErrNoLog = errors.New("responses: the response's events are not kept")

// JobsConfig configures a runner.
type JobsConfig struct {
	// Max bounds the jobs running at once (0: DefaultMaxJobs); LogBytes
	// each event log (0: DefaultLogBytes).
	Max, LogBytes int
	// Store, when set, keeps a copy of every job's events for the other
	// hosts, hears the cancels they ask for, and fails the responses of
	// hosts that are gone, every Sweep (0: 2 s) while a response is
	// unfinished anywhere and every IdleSweep (0: 15 s) while none is:
	// then only one started and orphaned since can need it, and an idle
	// gateway should not query its store every two seconds.
	Store     *Store
	Sweep     time.Duration
	IdleSweep time.Duration
	Logger    *slog.Logger
}

// Jobs runs background responses, detached from the requests that created
// them, each with its event log, until they end, are cancelled, or Close
// stops them all.
type Jobs struct {
	cfg JobsConfig

	mu      sync.Mutex
	running map[string]*job
	closed  bool
	wg      sync.WaitGroup
	stop    chan struct{}
	started chan struct{} // a job began: the sweep keeps its busy pace
}

type job struct {
	cancel  context.CancelCauseFunc
	log     *EventLog
	done    chan struct{}
	current func() json.RawMessage
}

// ErrCancelled is the cause a cancelled job's context reports.
var ErrCancelled = errors.New("responses: the response was cancelled")

// NewJobs returns a runner.
func NewJobs(cfg JobsConfig) *Jobs {
	if cfg.Max <= 0 {
		cfg.Max = DefaultMaxJobs
	}
	if cfg.LogBytes <= 0 {
		cfg.LogBytes = DefaultLogBytes
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = 2 * time.Second
	}
	if cfg.IdleSweep <= 0 {
		cfg.IdleSweep = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j := &Jobs{cfg: cfg, running: map[string]*job{}, stop: make(chan struct{}), started: make(chan struct{}, 1)}
	if cfg.Store != nil {
		cancels, stop := cfg.Store.signals.Listen(topicCancel)
		j.wg.Go(func() {
			defer stop()
			j.watch(cancels)
		})
	}
	return j
}

// watch cancels the jobs another host asked to cancel, at once when the
// signal arrives and on the sweep's timer otherwise, and fails the
// responses of hosts that are gone.
func (j *Jobs) watch(cancels <-chan string) {
	t := time.NewTimer(j.cfg.Sweep)
	defer t.Stop()
	idle := false
	for {
		select {
		case <-j.stop:
			return
		case id := <-cancels:
			j.interrupt(id)
			continue
		case <-j.started:
			if idle {
				idle = false
				t.Reset(j.cfg.Sweep)
			}
			continue
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), j.cfg.Sweep)
		ids, pending, err := j.cfg.Store.Sweep(ctx)
		cancel()
		if err != nil {
			pending = true // look again soon
			j.cfg.Logger.Warn("store: could not sweep the background responses", "err", err)
		}
		for _, id := range ids {
			j.interrupt(id)
		}
		j.mu.Lock()
		idle = !pending && len(j.running) == 0
		j.mu.Unlock()
		if idle {
			t.Reset(j.cfg.IdleSweep)
		} else {
			t.Reset(j.cfg.Sweep)
		}
	}
}

// Start runs f in the background as response id. Its context ends when
// the response is cancelled (cause ErrCancelled) or the runner closes.
// current tells the response object as it stands while it runs.
func (j *Jobs) Start(id string, current func() json.RawMessage, f func(ctx context.Context, log *EventLog)) (*EventLog, error) {
	if j.cfg.Store != nil {
		// The stored log exists before anyone learns the response's id,
		// so a follower on another host waits for its events rather than
		// finding none.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := j.cfg.Store.events.Append(ctx, id, 0, nil, j.cfg.LogBytes)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("responses: %w", err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, context.Canceled
	}
	if len(j.running) >= j.cfg.Max {
		return nil, ErrBusy
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	jb := &job{cancel: cancel, log: NewEventLog(j.cfg.LogBytes), done: make(chan struct{}), current: current}
	var m *mirror
	if j.cfg.Store != nil {
		m = newMirror(j.cfg.Store, id, j.cfg.LogBytes, j.cfg.Logger)
		jb.log.sink = m.add
	}
	j.running[id] = jb
	select {
	case j.started <- struct{}{}:
	default:
	}
	j.wg.Go(func() {
		defer func() {
			cancel(nil)
			jb.log.End()
			if m != nil {
				// Followers elsewhere see the whole log before it ends.
				m.close(10 * time.Second)
			}
			j.mu.Lock()
			delete(j.running, id)
			j.mu.Unlock()
			close(jb.done)
		}()
		f(ctx, jb.log)
	})
	return jb.log, nil
}

// Log returns a running job's event log, if it runs here.
func (j *Jobs) Log(id string) (*EventLog, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, ok := j.running[id]
	if !ok {
		return nil, false
	}
	return jb.log, true
}

// Keeps reports whether every event of response id after sequence number
// after is still kept: in the log of a job running here, else in the copy
// in the store. ErrNoLog: none is kept at all.
func (j *Jobs) Keeps(ctx context.Context, id string, after int) (bool, error) {
	if log, ok := j.Log(id); ok {
		return log.Keeps(after), nil
	}
	if j.cfg.Store == nil {
		return false, ErrNoLog
	}
	log, err := j.cfg.Store.events.Read(ctx, id, after, 1)
	if err != nil {
		return false, ownLogErr(err)
	}
	return log.First <= after+1, nil
}

// Follow writes response id's events after sequence number after, then
// new ones as they come, until its log ends or ctx does: from the job's
// own log when it runs here, else from the store's copy, waking at each
// signal that it grew (and on a timer, should a signal be lost).
func (j *Jobs) Follow(ctx context.Context, id string, after int, write func(frames [][]byte) error) error {
	if log, ok := j.Log(id); ok {
		return log.Follow(ctx, after, write)
	}
	if j.cfg.Store == nil {
		return ErrNoLog
	}
	grew, stop := j.cfg.Store.signals.Listen(topicEvents)
	defer stop()
	next := after
	for {
		log, err := j.cfg.Store.events.Read(ctx, id, next, 256)
		if err != nil {
			return ownLogErr(err)
		}
		if log.First > next+1 {
			return fmt.Errorf("%w: events from %d on are kept, %d was asked for", ErrTrimmed, log.First, next+1)
		}
		if len(log.Frames) > 0 {
			if err := write(log.Frames); err != nil {
				return err
			}
			next = log.First + len(log.Frames) - 1
			continue
		}
		if log.Ended {
			return nil
		}
		if err := waitFor(ctx, grew, id, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

// waitFor waits for a signal naming id, at most d.
func waitFor(ctx context.Context, signals <-chan string, id string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case got := <-signals:
			if got == id {
				return nil
			}
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func ownLogErr(err error) error {
	if errors.Is(ownErr(err), ErrNotFound) {
		return ErrNoLog
	}
	return ownErr(err)
}

// Current is a running job's response object as it stands, if it runs
// here.
func (j *Jobs) Current(id string) (json.RawMessage, bool) {
	j.mu.Lock()
	jb, ok := j.running[id]
	j.mu.Unlock()
	if !ok {
		return nil, false
	}
	return jb.current(), true
}

// Cancel interrupts background response id of scope and waits until it
// has ended: here, or — through the store — on the host that runs it,
// which hears of it at once. It reports false when the response is not
// running anywhere.
func (j *Jobs) Cancel(ctx context.Context, scope, id string) (bool, error) {
	if done, ok := j.interrupt(id); ok {
		select {
		case <-done:
		case <-ctx.Done():
		}
		return true, nil
	}
	s := j.cfg.Store
	if s == nil {
		return false, nil
	}
	ended, stop := s.signals.Listen(topicEvents)
	defer stop()
	asked, err := s.rs.AskCancel(ctx, scope, id)
	if err != nil || !asked {
		return false, ownErr(err)
	}
	if err := s.signals.Notify(ctx, topicCancel, id); err != nil {
		j.cfg.Logger.Warn("store: could not signal a cancel; the host running it finds it at its next sweep", "response", id, "err", err)
	}
	for {
		r, err := s.rs.Get(ctx, scope, id)
		if err != nil {
			return true, ownErr(err)
		}
		if r.Status != "queued" && r.Status != "in_progress" {
			return true, nil
		}
		if err := waitFor(ctx, ended, id, 250*time.Millisecond); err != nil {
			return true, err
		}
	}
}

// interrupt cancels a job running here; done closes once it has ended.
// ok is false when none runs here.
func (j *Jobs) interrupt(id string) (done <-chan struct{}, ok bool) {
	j.mu.Lock()
	jb, ok := j.running[id]
	j.mu.Unlock()
	if !ok {
		return nil, false
	}
	jb.cancel(ErrCancelled)
	return jb.done, true
}

// Running reports how many jobs run.
func (j *Jobs) Running() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.running)
}

// Close cancels every job and waits for them all.
func (j *Jobs) Close() {
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.stop)
	}
	for _, jb := range j.running {
		jb.cancel(context.Canceled)
	}
	j.mu.Unlock()
	j.wg.Wait()
}
