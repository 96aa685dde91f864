package pool

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/meridian-gw/meridian/internal/admission"
	"github.com/meridian-gw/meridian/internal/backend"
)

// spareBackend starts fake spares and counts them.
type spareBackend struct{ started atomic.Int32 }

func (b *spareBackend) Start(context.Context, backend.StartOptions) (backend.Session, error) {
	return &idleSession{id: "started"}, nil
}

func (b *spareBackend) StartSpare(context.Context, backend.StartOptions) (backend.Session, error) {
	n := b.started.Add(1)
	return &idleSession{id: fmt.Sprint("spare-", n)}, nil
}

// idleSession is a session that never runs a turn; its id, like a real
// one's, is its own.
type idleSession struct {
	id     string
	closed atomic.Bool
}

func (s *idleSession) Turn(context.Context, backend.Input, func(*backend.Event) error) (*backend.Result, error) {
	return &backend.Result{}, nil
}
func (s *idleSession) Answer(backend.ToolResult) error { return nil }
func (s *idleSession) Close() error                    { s.closed.Store(true); return nil }
func (s *idleSession) ID() string                      { return s.id }
func (s *idleSession) Alive() bool                     { return !s.closed.Load() }
func (s *idleSession) Bind(backend.StartOptions) error { return nil }

// testKey is the tests' start-time key: the gateway's digests more.
func testKey(o backend.StartOptions) string { return o.Model + "/" + o.Effort }

// spareRig is a pool with spares, its turns admitted as the gateway
// admits them.
type spareRig struct {
	*Pool
	slots *admission.Limiter
}

type rigConfig struct {
	min, max, maxLive, concurrent int
	cpu                           float64
	starts                        StartLog
}

func newRig(b *spareBackend, c rigConfig) *spareRig {
	if c.concurrent == 0 {
		c.concurrent = 10
	}
	slots := admission.New(c.concurrent, time.Hour)
	p := New(Config{Max: c.maxLive, FreezeAfter: -1,
		Load:   func() (int, int) { r, w, _ := slots.Stats(); return r, w },
		Spares: SpareConfig{Backend: b, Min: c.min, Max: c.max, CPU: c.cpu, Starts: c.starts, Key: testKey}})
	return &spareRig{Pool: p, slots: slots}
}

// admit takes a slot as a turn does, telling the pool.
func (r *spareRig) admit(t *testing.T) func() {
	release, err := r.slots.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.TurnsChanged()
	return func() { release(); r.TurnsChanged() }
}

// refill is a new conversation's start, as Obtain counts it.
func (r *spareRig) refill(opts backend.StartOptions) { r.spares.started(opts) }

func spareCount(p *spareRig) int {
	n := 0
	for _, c := range p.Spares() {
		n += c
	}
	return n
}

// burstOf runs n first turns of opts at once (each takes a spare if one
// waits, as a real turn does), then ends them.
func burstOf(p *spareRig, opts backend.StartOptions, n int) {
	var done []func()
	for i := range n {
		done = append(done, p.Arrive(opts))
		if l := p.takeSpare(Want{Key: fmt.Sprint("conversation-", time.Now().UnixNano(), "-", i), New: true, Options: opts}); l != nil {
			p.Discard(l)
		} else {
			p.refill(opts)
		}
	}
	for _, d := range done {
		d()
	}
}

// Spares grow to a burst's size in the idle time after it, one at a time,
// and shrink back to the minimum as the burst is forgotten.
func TestSparesGrowWithABurstAndShrinkBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 12, maxLive: 32})
		defer g.Close()
		opts := backend.StartOptions{Model: "m"}
		g.refill(opts) // a first conversation shows the options
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 1 {
			t.Fatalf("%d spares after one conversation, want the minimum, 1", n)
		}
		burst := time.Now()
		burstOf(g, opts, 10)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n == 0 || n >= 10 {
			t.Fatalf("%d spares 3 s after the burst: they should start one a second", n)
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 10 {
			t.Fatalf("%d spares after a burst of ten, want ten", n)
		}
		for _, c := range []struct {
			at   time.Duration
			want int
		}{{16 * time.Minute, 5}, {61 * time.Minute, 1}} {
			time.Sleep(time.Until(burst.Add(c.at)))
			synctest.Wait()
			if n := spareCount(g); n != c.want {
				t.Fatalf("%d spares %s after the burst, want %d", n, c.at, c.want)
			}
		}
		if n := int(b.started.Load()); n != 11 {
			t.Fatalf("%d spares started in all, want 1 + 10", n)
		}
	})
}

// First turns one after another, however many, keep the spares at their
// minimum: each finds the spare the one before it left.
func TestOneAfterAnotherKeepsTheMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 12, maxLive: 32})
		defer g.Close()
		opts := backend.StartOptions{Model: "m"}
		g.refill(opts)
		for range 40 {
			time.Sleep(2 * time.Second)
			synctest.Wait()
			burstOf(g, opts, 1)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := spareCount(g); n != 1 {
			t.Fatalf("%d spares after 40 first turns one after another, want 1", n)
		}
	})
}

// No spare starts while a request waits for a process slot, or while
// turns run on every core; it starts once they are done.
func TestNoSpareWhileTurnsNeedTheMachine(t *testing.T) {
	cores := runtime.NumCPU()
	for name, hold := range map[string]struct{ running, waiting int }{
		"a request waits":       {running: 1, waiting: 1},
		"every core has a turn": {running: cores},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &spareBackend{}
				g := newRig(b, rigConfig{min: 1, max: 4, maxLive: 32, concurrent: hold.running})
				defer g.Close()
				var releases []func()
				for range hold.running {
					r, err := g.slots.Acquire(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					releases = append(releases, r)
				}
				var waiters sync.WaitGroup
				for range hold.waiting {
					waiters.Go(func() {
						if r, err := g.slots.Acquire(context.Background()); err == nil {
							r()
						}
					})
				}
				g.refill(backend.StartOptions{Model: "m"})
				time.Sleep(10 * time.Second)
				synctest.Wait()
				if n := b.started.Load(); n != 0 {
					t.Fatalf("%d spares started while %s", n, name)
				}
				for _, r := range releases {
					r()
				}
				waiters.Wait()
				time.Sleep(2 * time.Second)
				synctest.Wait()
				if n := spareCount(g); n != 1 {
					t.Fatalf("%d spares once the machine was idle, want 1", n)
				}
			})
		})
	}
}

// Below their minimum, spares make room by closing the least recently
// used idle conversation (the pool is full of them); above it only
// conversations idle a minute make room.
func TestTheMinimumSpareMakesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 4, maxLive: 3})
		defer g.Close()
		var idle []*idleSession
		for _, k := range []string{"a", "b", "c"} {
			if err := g.Reserve(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := &idleSession{id: k}
			idle = append(idle, s)
			g.Put(&Live{Key: k, Session: s})
			time.Sleep(time.Second)
		}
		opts := backend.StartOptions{Model: "m"}
		burstOf(g, opts, 3) // asks for three spares; the pool is full
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 1 {
			t.Fatalf("%d spares in a full pool, want the minimum, 1", n)
		}
		if !idle[0].closed.Load() || idle[1].closed.Load() || idle[2].closed.Load() {
			t.Fatal("the spare's room was not the least recently used conversation's alone")
		}
		// Once the others have been idle a minute, the spares the burst
		// asked for take their places.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := spareCount(g); n != 3 || !idle[1].closed.Load() || !idle[2].closed.Load() {
			t.Fatalf("%d spares two minutes on, want the three the burst asked for", n)
		}
	})
}

// At start, the first spare is made for the options the start log says
// were used most; new starts are counted in it, off the request path.
func TestASpareAtStartFromTheStartLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &memStartLog{}
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 4, maxLive: 8, starts: log})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 0 {
			t.Fatalf("%d spares on an empty start log", n)
		}
		g.refill(backend.StartOptions{Model: "used", Effort: "high", System: []string{"not kept"}})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		g.Close()
		if len(log.rows) != 1 {
			t.Fatalf("the start log has %d rows", len(log.rows))
		}

		g = newRig(b, rigConfig{min: 1, max: 4, maxLive: 8, starts: log})
		defer g.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		want := testKey(backend.StartOptions{Model: "used", Effort: "high"})
		if got := g.Spares(); got[want] != 1 || len(got) != 1 {
			t.Fatalf("spares at start: %v, want one for the logged options", got)
		}
	})
}

// memStartLog is a StartLog in memory: the last options recorded.
type memStartLog struct {
	mu   sync.Mutex
	rows map[string][]byte
}

func (m *memStartLog) Record(_ context.Context, _, contract string, options []byte, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[string][]byte{}
	}
	m.rows[contract] = options
	return nil
}

func (m *memStartLog) Top(context.Context, string, time.Time) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.rows {
		return o, true, nil
	}
	return nil, false, nil
}

// Under a burst that holds every slot for a while, no spare starts however
// many the burst asks for; they start, one a second, once it is over.
func TestNoSpareStartsDuringABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 12, maxLive: 32, concurrent: 4})
		defer g.Close()
		opts := backend.StartOptions{Model: "m"}
		g.refill(opts)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		before := b.started.Load()
		var wg sync.WaitGroup
		for i := range 10 { // four run, six wait for a slot
			wg.Go(func() {
				done := g.Arrive(opts)
				defer done()
				release, err := g.slots.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				g.refill(opts)
				time.Sleep(time.Duration(5+i) * time.Second) // a long turn
				release()
			})
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := b.started.Load() - before; n != 0 {
			t.Fatalf("%d spares started during the burst", n)
		}
		wg.Wait()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 10 {
			t.Fatalf("%d spares after the burst, want the ten it ran at once", n)
		}
	})
}

// Under a CPU budget the spares beyond the minimum come back slowly: the
// minimum at once, one more, then one each time the last one's cost
// spread at the budget allows (a process this fake's spares lack counts
// half a second: 50 s apart at 1 % of a core).
func TestSparesKeepToTheirCPUBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &spareBackend{}
		g := newRig(b, rigConfig{min: 1, max: 12, maxLive: 32, cpu: 0.01})
		defer g.Close()
		opts := backend.StartOptions{Model: "m"}
		g.refill(opts)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		burstOf(g, opts, 10)
		started := b.started.Load()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := spareCount(g); n != 2 {
			t.Fatalf("%d spares 30 s after a burst of ten under 1 %% of a core, want the minimum and one more", n)
		}
		time.Sleep(4*time.Minute + 30*time.Second)
		synctest.Wait()
		if n := b.started.Load() - started; n < 6 || n > 8 {
			t.Fatalf("%d spares started in the five minutes after the burst, want one every 50 s after the first two", n)
		}
	})
}
