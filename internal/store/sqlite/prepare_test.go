package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// BenchmarkHeartbeat is the call an idle gateway makes most (every 5 s),
// with its statement kept prepared and parsed each time, side by side.
func BenchmarkHeartbeat(b *testing.B) {
	for _, side := range []struct {
		name    string
		prepare bool
	}{{"prepared", true}, {"parsed", false}} {
		b.Run(side.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "meridian.db")
			db, err := Open(context.Background(), path)
			if err != nil {
				b.Fatal(err)
			}
			d := dialect()
			d.Prepare = side.prepare
			st := sqlstore.New(db, d, sqlstore.Options{}, sqlstore.NewHub(nil), "sqlite", path, db.Close)
			defer st.Close()
			h := store.Host{Owner: store.Owner{Host: "bench", Incarnation: "1:1"}, Addr: "127.0.0.1:3456", Started: time.Now()}
			ctx := context.Background()
			for b.Loop() {
				h.Expires = time.Now().Add(15 * time.Second)
				if err := st.Hosts.Beat(ctx, h); err != nil {
					b.Fatal(err)
				}
				if _, _, err := st.Hosts.Get(ctx, h.Owner); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
