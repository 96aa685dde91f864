package session

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/postgres"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// engine is one store a benchmark turns on.
type engine struct {
	name   string
	st     *store.Store
	conv   *Store
	leases *Leases
	phases map[string][]time.Duration
}

func newEngine(b *testing.B, name string, st *store.Store) *engine {
	b.Cleanup(func() { _ = st.Close() })
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "bench-" + name})
	if err := owners.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(owners.Close)
	return &engine{name: name, st: st, conv: NewStore(st.Conversations, nil), leases: NewLeases(st.Leases, owners, 0, nil),
		phases: map[string][]time.Duration{}}
}

// turn does what one turn of a conversation asks of the store, in the
// gateway's order: read the conversation's row (the request's one read,
// which routes it), take the turn lease, read the row again only if the
// lease says it moved (or reread, the order before the lease said so),
// check the request's tool results against those already delivered,
// publish the new mapping with them (fenced by the lease), release the
// lease.
func (e *engine) turn(b *testing.B, key string, n int, reread bool) {
	ctx := context.Background()
	t0 := time.Now()
	m, err := e.conv.Latest(ctx, key)
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	lease, err := e.leases.Acquire(ctx, "default", key, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	t2 := time.Now()
	if reread || lease.Version() == 0 || lease.Version() != m.Version {
		if m, err = e.conv.Load(ctx, "default", key); err != nil {
			b.Fatal(err)
		}
	}
	ids := []string{fmt.Sprintf("toolu_%s_%d_a", key, n), fmt.Sprintf("toolu_%s_%d_b", key, n)}
	t3 := time.Now()
	if _, err := e.conv.Consumed(ctx, "default", key, ids); err != nil {
		b.Fatal(err)
	}
	t4 := time.Now()
	prev := m.Version
	m.Profile, m.Client, m.SessionID, m.Cwd, m.Model = "default", "claude-code", "sid-"+key, "/w", "bench-model"
	for range 2 {
		var d lineage.Digest
		d[0], d[1] = byte(n), byte(len(m.State.Messages))
		m.State.Messages = append(m.State.Messages, d)
		m.State.Pins = append(m.State.Pins, "")
	}
	if _, err := e.conv.Publish(ctx, m, prev, lineage.Continuation, Turn{Lease: lease, Delivered: ids}); err != nil {
		b.Fatal(err)
	}
	t5 := time.Now()
	lease.Release()
	t6 := time.Now()
	phases := map[string]time.Duration{"read": t1.Sub(t0), "lease": t2.Sub(t1), "reread": t3.Sub(t2), "consumed": t4.Sub(t3),
		"publish": t5.Sub(t4), "release": t6.Sub(t5), "turn": t6.Sub(t0)}
	if reread {
		phases = map[string]time.Duration{"turn-rereading": t6.Sub(t0)}
	}
	for phase, d := range phases {
		e.phases[phase] = append(e.phases[phase], d)
	}
}

func p50us(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Microsecond)
}

// BenchmarkStorePerTurn measures, side by side in one run, what a turn
// costs in the store on the embedded SQLite file and on a real PostgreSQL
// server over loopback (its default durability: every commit flushed), by
// phase, and beside it the turn that reads the row again under its lease. Each engine first holds a full history: a thousand
// conversations and as many delivered tool results as the store keeps, so
// every publish also prunes at its bound.
func BenchmarkStorePerTurn(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "meridian.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	lite := newEngine(b, "sqlite", sqlite.NewStore(db, path, sqlstore.Options{}))
	pgst, err := postgres.Open(ctx, testkit.PostgresServer(b).NewDatabase(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pg := newEngine(b, "postgres", pgst)
	engines := []*engine{lite, pg}
	for _, e := range engines {
		for c := range 1000 {
			for n := range 5 {
				e.turn(b, fmt.Sprintf("history-%d", c), n, false)
			}
		}
		clear(e.phases)
	}
	b.ResetTimer()
	for i := range b.N {
		// Turns of each engine alternate, so both see the same machine;
		// so do turns of conversations that trust the lease's version and
		// of others that read the row again under it, as every turn did
		// before.
		for _, e := range engines {
			first, second := i%2 == 0, i%2 == 1 // neither always goes first
			e.turn(b, fmt.Sprintf("c%v-%d", first, i/10), i%10, first)
			e.turn(b, fmt.Sprintf("c%v-%d", second, i/10), i%10, second)
		}
	}
	b.StopTimer()
	for _, e := range engines {
		for _, phase := range []string{"read", "lease", "reread", "consumed", "publish", "release", "turn", "turn-rereading"} {
			b.ReportMetric(p50us(e.phases[phase]), e.name+"-"+phase+"-p50-us")
		}
	}
	b.ReportMetric(p50us(pg.phases["turn"])-p50us(lite.phases["turn"]), "postgres-extra-turn-p50-us")
}
