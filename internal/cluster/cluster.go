// Package cluster knows the meridians sharing a store: this one's host id
// (stable per data dir) and process incarnation, the heartbeat that says
// it is alive, and whether the owner of a record still is. Across hosts
// liveness is a heartbeat with an expiry, never a pid; on this host a
// gone process is known at once.
package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/store"
)

// DefaultExpiry is how long a host counts as alive after its last
// heartbeat; it beats three times within it.
const DefaultExpiry = 15 * time.Second

// hostIDFile holds a data dir's host id.
const hostIDFile = "host-id"

// validID is what a host id may hold: it goes into logs, pages and
// headers.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// HostID returns the data dir's host id, making one on first use: the
// machine's name and a random suffix, so two data dirs on one machine are
// two hosts.
func HostID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, hostIDFile)
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if !validID.MatchString(id) {
			return "", fmt.Errorf("%s holds %q, which is not a host id (letters, digits, '.', '_', '-'); fix or remove it", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("host id: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	name, _ := os.Hostname()
	name = strings.Trim(regexp.MustCompile(`[^A-Za-z0-9-]+`).ReplaceAllString(name, "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	if name == "" {
		name = "meridian"
	}
	id := name + "-" + strings.ToLower(rand.Text()[:6])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return HostID(dataDir) // another meridian made it first
	}
	if err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	_, werr := f.WriteString(id + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", fmt.Errorf("host id: %w", err)
	}
	return id, nil
}

// Config configures a Registry.
type Config struct {
	Hosts store.Hosts
	// Host is this meridian's host id; Addr where it listens; Version its
	// build.
	Host, Addr, Version string
	// Expiry is how long a heartbeat lasts (0: DefaultExpiry).
	Expiry time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Registry beats for this meridian and judges others.
type Registry struct {
	cfg     Config
	self    store.Owner
	started time.Time
	stop    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu    sync.Mutex
	addr  string
	state string
	load  func() (live, running int)
	// fails counts the beats that failed in a row; tried is when the last
	// was tried.
	fails int
	tried time.Time
	// cut are the hosts this one found unreachable (a refused
	// connection, an answer broken off), each with the expiry of the
	// heartbeat it had then: taken for gone until it beats again.
	cut map[store.Owner]time.Time
}

// maxCut bounds the hosts remembered as unreachable.
const maxCut = 64

// unreachableAfter is how many beats must fail in a row before this host
// says the store is out of its reach: one slow query is not an outage.
const unreachableAfter = 2

// recheck is how often Reachable may beat on its own while the store is
// out of reach, to see it back at once.
const recheck = time.Second

// New returns a registry for this process. Start it before anything
// records this process as an owner.
func New(cfg Config) *Registry {
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Registry{cfg: cfg, self: store.Owner{Host: cfg.Host, Incarnation: procident.Owner()}, started: cfg.Now(), stop: make(chan struct{}),
		addr: cfg.Addr, state: store.HostServing}
}

// Advertise sets the address the other hosts reach this one at (known
// once it listens) and beats with it.
func (r *Registry) Advertise(ctx context.Context, addr string) error {
	r.mu.Lock()
	r.addr = addr
	r.mu.Unlock()
	return r.beat(ctx)
}

// Report makes each beat carry this host's load: its live CLI processes
// and running turns.
func (r *Registry) Report(load func() (live, running int)) {
	r.mu.Lock()
	r.load = load
	r.mu.Unlock()
}

// Drain says, at once and in every beat after, that this host takes no
// new work: it finishes what it runs.
func (r *Registry) Drain(ctx context.Context) {
	r.mu.Lock()
	r.state = store.HostDraining
	r.mu.Unlock()
	if err := r.beat(ctx); err != nil {
		r.cfg.Logger.Warn("store: could not say this host drains; its next beat says it", "err", err)
	}
}

// Self names this process as an owner.
func (r *Registry) Self() store.Owner { return r.self }

// Expiry is how long a heartbeat lasts.
func (r *Registry) Expiry() time.Duration { return r.cfg.Expiry }

// Start beats once (an error if the store cannot take it) and then keeps
// beating until Close.
func (r *Registry) Start(ctx context.Context) error {
	if err := r.beat(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	r.wg.Go(r.run)
	return nil
}

func (r *Registry) beat(ctx context.Context) error {
	r.mu.Lock()
	h := store.Host{Owner: r.self, Addr: r.addr, Version: r.cfg.Version, Started: r.started, State: r.state}
	load := r.load
	r.tried = r.cfg.Now()
	r.mu.Unlock()
	if load != nil {
		h.Live, h.Running = load()
	}
	h.Expires = r.cfg.Now().Add(r.cfg.Expiry)
	err := r.cfg.Hosts.Beat(ctx, h)
	r.mu.Lock()
	if err != nil {
		r.fails++
	} else {
		r.fails = 0
	}
	r.mu.Unlock()
	return err
}

// Reachable says whether this host can reach the store: false once its
// beats have failed unreachableAfter times in a row, until one succeeds.
// While it is out of reach a call beats at once (at most every recheck),
// so that a store that is back is seen back without waiting for the next
// periodic beat.
func (r *Registry) Reachable(ctx context.Context) bool {
	r.mu.Lock()
	fails, tried := r.fails, r.tried
	r.mu.Unlock()
	if fails < unreachableAfter {
		return true
	}
	if r.cfg.Now().Sub(tried) < recheck {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, recheck)
	defer cancel()
	return r.beat(ctx) == nil
}

func (r *Registry) run() {
	t := time.NewTicker(r.cfg.Expiry / 3)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Expiry/3)
		if err := r.beat(ctx); err != nil {
			r.cfg.Logger.Warn("store: could not beat; other hosts take this one for gone once its heartbeat expires", "err", err)
		}
		cancel()
	}
}

// Close stops beating and removes the heartbeat: this process's records
// are its own to end, and nothing of it runs after.
func (r *Registry) Close() {
	r.once.Do(func() {
		close(r.stop)
		r.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.cfg.Hosts.Leave(ctx, r.self); err != nil {
			r.cfg.Logger.Warn("store: could not remove this host's heartbeat; it expires on its own", "err", err)
		}
	})
}

// Alive reports whether owner's process runs: this one does; another on
// this host is asked of the kernel; one elsewhere lives while its
// heartbeat has not expired.
func (r *Registry) Alive(ctx context.Context, owner store.Owner) (bool, error) {
	switch {
	case owner == r.self:
		return true, nil
	case owner.Host == r.self.Host:
		return procident.OwnerAlive(owner.Incarnation), nil
	}
	h, ok, err := r.cfg.Hosts.Get(ctx, owner)
	if err != nil {
		return false, err
	}
	return ok && r.live(h, r.cfg.Now()), nil
}

// Host is the heartbeat of o's host; ok is false once it has expired or
// was never there, or while o is unreachable.
func (r *Registry) Host(ctx context.Context, o store.Owner) (store.Host, bool, error) {
	h, ok, err := r.cfg.Hosts.Get(ctx, o)
	if err != nil || !ok || !r.live(h, r.cfg.Now()) {
		return store.Host{}, false, err
	}
	return h, true, nil
}

// Unreachable records that o's host refused a connection or broke one in
// the middle of an answer: a process that died does both long before its
// heartbeat expires. It is taken for gone — its requests' outcomes
// unknown, its conversations answered elsewhere — until it beats again,
// so a host that only lost one connection is back within a beat.
func (r *Registry) Unreachable(ctx context.Context, o store.Owner) {
	h, ok, err := r.cfg.Hosts.Get(ctx, o)
	if err != nil || !ok || o == r.self {
		return
	}
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut == nil {
		r.cut = map[store.Owner]time.Time{}
	}
	if len(r.cut) >= maxCut {
		for k, at := range r.cut {
			if !at.After(now) {
				delete(r.cut, k) // its heartbeat expired: gone anyway
			}
		}
		if len(r.cut) >= maxCut {
			return
		}
	}
	r.cut[o] = h.Expires
}

// live says whether heartbeat h stands at now: not expired, and newer
// than when its host was found unreachable.
func (r *Registry) live(h store.Host, now time.Time) bool {
	if !h.Expires.After(now) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.cut[h.Owner]
	if !ok {
		return true
	}
	if h.Expires.After(at) {
		delete(r.cut, h.Owner) // it beat since
		return true
	}
	return false
}

// Member is a host as the cluster sees it: serving, draining, or gone
// (its heartbeat expired within the last hour).
type Member struct {
	store.Host
	Self bool
}

// Gone is the state of a host whose heartbeat expired.
const Gone = "gone"

// Members lists every host that beat within the last hour, the gone ones
// with state Gone.
func (r *Registry) Members(ctx context.Context) ([]Member, error) {
	now := r.cfg.Now()
	all, err := r.cfg.Hosts.List(ctx, now.Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(all))
	for _, h := range all {
		if !h.Expires.After(now) {
			h.State = Gone
		}
		out = append(out, Member{Host: h, Self: h.Owner == r.self})
	}
	return out, nil
}

// Hosts lists the meridians sharing the store with a heartbeat that has
// not expired.
func (r *Registry) Hosts(ctx context.Context) ([]store.Host, error) {
	now := r.cfg.Now()
	all, err := r.cfg.Hosts.List(ctx, now.Add(-time.Hour))
	if err != nil {
		return nil, err
	}
	var out []store.Host
	for _, h := range all {
		if r.live(h, now) {
			out = append(out, h)
		}
	}
	return out, nil
}
