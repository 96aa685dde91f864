package responses

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
)

// DefaultMaxJobs bounds background responses running at once.
const DefaultMaxJobs = 16

// ErrBusy is returned by Start when the bound of background responses is
// reached: new work is refused rather than running work evicted.
var ErrBusy = errors.New("responses: too many background responses are running")

// Jobs runs background responses, detached from the requests that created
// them, each with its event log, until they end, are cancelled, or Close
// stops them all.
type Jobs struct {
	max     int
	logSize int

	mu      sync.Mutex
	running map[string]*job
	closed  bool
	wg      sync.WaitGroup
}

type job struct {
	cancel  context.CancelCauseFunc
	log     *EventLog
	done    chan struct{}
	current func() json.RawMessage
}

// ErrCancelled is the cause a cancelled job's context reports.
var ErrCancelled = errors.New("responses: the response was cancelled")

// NewJobs returns a runner of at most max jobs (DefaultMaxJobs if 0), each
// with an event log of logSize bytes (DefaultLogBytes if 0).
func NewJobs(max, logSize int) *Jobs {
	if max <= 0 {
		max = DefaultMaxJobs
	}
	return &Jobs{max: max, logSize: logSize, running: map[string]*job{}}
}

// Start runs f in the background as response id. Its context ends when
// the response is cancelled (cause ErrCancelled) or the runner closes.
// current tells the response object as it stands while it runs.
func (j *Jobs) Start(id string, current func() json.RawMessage, f func(ctx context.Context, log *EventLog)) (*EventLog, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, context.Canceled
	}
	if len(j.running) >= j.max {
		return nil, ErrBusy
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	jb := &job{cancel: cancel, log: NewEventLog(j.logSize), done: make(chan struct{}), current: current}
	j.running[id] = jb
	j.wg.Go(func() {
		defer func() {
			cancel(nil)
			jb.log.End()
			j.mu.Lock()
			delete(j.running, id)
			j.mu.Unlock()
			close(jb.done)
		}()
		f(ctx, jb.log)
	})
	return jb.log, nil
}

// Log returns a running job's event log.
func (j *Jobs) Log(id string) (*EventLog, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, ok := j.running[id]
	if !ok {
		return nil, false
	}
	return jb.log, true
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

// Cancel interrupts a running job and waits until it has ended. It
// reports false when no such job runs here.
func (j *Jobs) Cancel(ctx context.Context, id string) bool {
	j.mu.Lock()
	jb, ok := j.running[id]
	j.mu.Unlock()
	if !ok {
		return false
	}
	jb.cancel(ErrCancelled)
	select {
	case <-jb.done:
	case <-ctx.Done():
	}
	return true
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
	j.closed = true
	for _, jb := range j.running {
		jb.cancel(context.Canceled)
	}
	j.mu.Unlock()
	j.wg.Wait()
}
