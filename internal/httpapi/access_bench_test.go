package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/postgres"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// keyCheck is one side of BenchmarkKeyCheck: a server and the key its
// requests carry.
type keyCheck struct {
	name  string
	srv   *Server
	key   string
	times []time.Duration
}

// check runs what a model request costs in the guard and the handler for
// its key, up to the turn and after it: authenticate, admitKey, done.
func (k *keyCheck) check(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	if k.key != "" {
		r.Header.Set("X-Api-Key", k.key)
	}
	w := httptest.NewRecorder()
	began := time.Now()
	if k.srv.access.hasAdmin || k.srv.access.keys != nil {
		var ok bool
		if r, ok = k.srv.access.authenticate(w, r); !ok {
			b.Fatalf("%s: refused %d %s", k.name, w.Code, w.Body)
		}
	}
	done, ok := k.srv.access.admitKey(w, r, "test-model")
	if !ok {
		b.Fatalf("%s: refused %d %s", k.name, w.Code, w.Body)
	}
	done()
	k.times = append(k.times, time.Since(began))
}

func newKeyCheck(b *testing.B, name string, keys store.Keys, flags apikeys.Spec) *keyCheck {
	b.Helper()
	srv, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0"}, Access: Access{Keys: keys}, Models: noModels()})
	if err != nil {
		b.Fatal(err)
	}
	k := &keyCheck{name: name, srv: srv}
	if keys != nil {
		flags.Name = name
		v, err := apikeys.Add(context.Background(), keys, flags, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		k.key = v.Key
	}
	return k
}

// BenchmarkKeyCheck measures, side by side in one run, what the API key
// check adds to a model request: no keys at all; a key without limits
// (a lookup in the keys read at most once a second); a key with limits on
// the embedded SQLite store and on a real PostgreSQL server over
// loopback (the admission transaction, the release and the tokens).
func BenchmarkKeyCheck(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "meridian.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	lite := sqlite.NewStore(db, path, sqlstore.Options{})
	defer lite.Close()
	pg, err := postgres.Open(ctx, testkit.PostgresServer(b).NewDatabase(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	limits := apikeys.Spec{RPM: 1 << 30, Concurrent: 1000, TokensPerDay: 1 << 40}
	sides := []*keyCheck{
		newKeyCheck(b, "none", nil, apikeys.Spec{}),
		newKeyCheck(b, "cached", lite.Keys, apikeys.Spec{}),
		newKeyCheck(b, "sqlite-limits", lite.Keys, limits),
		newKeyCheck(b, "postgres-limits", pg.Keys, limits),
	}
	b.ResetTimer()
	for b.Loop() {
		for _, k := range sides {
			k.check(b)
		}
	}
	b.StopTimer()
	for _, k := range sides {
		slices.Sort(k.times)
		b.ReportMetric(float64(k.times[len(k.times)/2])/float64(time.Microsecond), k.name+"-p50-us")
	}
}
