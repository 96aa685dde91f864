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
// gateway's order: take the turn lease, load the mapping, check the
// request's tool results against those already delivered, publish the
// new mapping with them (fenced by the lease), release the lease.
func (e *engine) turn(b *testing.B, key string, n int) {
	ctx := context.Background()
	t0 := time.Now()
	lease, err := e.leases.Acquire(ctx, "default", key, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	m, err := e.conv.Load(ctx, "default", key)
	if err != nil {
		b.Fatal(err)
	}
	ids := []string{fmt.Sprintf("toolu_%s_%d_a", key, n), fmt.Sprintf("toolu_%s_%d_b", key, n)}
	t2 := time.Now()
	if _, err := e.conv.Consumed(ctx, "default", key, ids); err != nil {
		b.Fatal(err)
	}
	t3 := time.Now()
	prev := m.Version
	m.Client, m.SessionID, m.Cwd, m.Model = "claude-code", "sid-"+key, "/w", "bench-model"
	for range 2 {
		var d lineage.Digest
		d[0], d[1] = byte(n), byte(len(m.State.Messages))
		m.State.Messages = append(m.State.Messages, d)
		m.State.Pins = append(m.State.Pins, "")
	}
	if _, err := e.conv.Publish(ctx, m, prev, lineage.Continuation, Turn{Lease: lease, Delivered: ids}); err != nil {
		b.Fatal(err)
	}
	t4 := time.Now()
	lease.Release()
	t5 := time.Now()
	for phase, d := range map[string]time.Duration{"lease": t1.Sub(t0), "load": t2.Sub(t1), "consumed": t3.Sub(t2),
		"publish": t4.Sub(t3), "release": t5.Sub(t4), "turn": t5.Sub(t0)} {
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
// phase. Each engine first holds a full history: a thousand
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
				e.turn(b, fmt.Sprintf("history-%d", c), n)
			}
		}
		clear(e.phases)
	}
	b.ResetTimer()
	for i := range b.N {
		// Turns of each engine alternate, so both see the same machine.
		for _, e := range engines {
			e.turn(b, fmt.Sprintf("bench-%d", i/10), i%10)
		}
	}
	b.StopTimer()
	for _, e := range engines {
		for _, phase := range []string{"lease", "load", "consumed", "publish", "release", "turn"} {
			b.ReportMetric(p50us(e.phases[phase]), e.name+"-"+phase+"-p50-us")
		}
	}
	b.ReportMetric(p50us(pg.phases["turn"])-p50us(lite.phases["turn"]), "postgres-extra-turn-p50-us")
}
