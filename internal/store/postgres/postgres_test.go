package postgres

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/store/storetest"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// server is the one PostgreSQL server this package's tests share; each
// test makes its own database on it.
func server(t *testing.T) *testkit.Postgres {
	t.Helper()
	if shared == nil {
		t.Fatal(sharedErr)
	}
	return shared
}

var (
	shared    *testkit.Postgres
	sharedErr error
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv("MERIDIAN_TEST_MIGRATE_DSN"); dsn != "" {
		// A second process migrating at once (TestConcurrentMigrations).
		s, err := Open(context.Background(), dsn, Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = s.Close()
		os.Exit(0)
	}
	shared, sharedErr = testkit.StartPostgres("")
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}

func open(t *testing.T, dsn string, opts Options) *store.Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pg := server(t)
	storetest.Run(t, storetest.Engine{SignalsAcross: true, New: func(t *testing.T, maxConversations, maxConsumed int) (*store.Store, func() *store.Store) {
		dsn := pg.NewDatabase(t)
		opts := Options{Options: sqlstore.Options{MaxConversations: maxConversations, MaxConsumed: maxConsumed}, PoolSize: 4}
		return open(t, dsn, opts), func() *store.Store { return open(t, dsn, opts) }
	}})
}

func schemaVersion(t *testing.T, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int
	if err := conn.QueryRow(context.Background(), `SELECT max(version) FROM meridian_schema`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMigrationsFreshAndRepeated(t *testing.T) {
	dsn := server(t).NewDatabase(t)
	for range 2 {
		s := open(t, dsn, Options{})
		if s.Engine != "postgres" || !strings.HasSuffix(s.Where, "/"+strings.TrimSuffix(dsn[strings.LastIndex(dsn, "/")+1:], "?sslmode=disable")) {
			t.Fatalf("engine %q at %q", s.Engine, s.Where)
		}
		_ = s.Close()
	}
	if v := schemaVersion(t, dsn); v != len(migrations()) {
		t.Fatalf("schema version %d, want %d", v, len(migrations()))
	}
}

// Two processes starting at once migrate once: the advisory lock has one
// wait for the other, which then finds the schema in place.
func TestConcurrentMigrations(t *testing.T) {
	dsn := server(t).NewDatabase(t)
	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MERIDIAN_TEST_MIGRATE_DSN="+dsn)
		cmds = append(cmds, cmd)
	}
	outs := make(chan error, len(cmds))
	for _, cmd := range cmds {
		go func() {
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, out)
			}
			outs <- err
		}()
	}
	for range cmds {
		if err := <-outs; err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM meridian_schema`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations()) {
		t.Fatalf("%d migrations recorded, want %d: one ran twice", rows, len(migrations()))
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	dsn := server(t).NewDatabase(t)
	_ = open(t, dsn, Options{}).Close()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `INSERT INTO meridian_schema (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	_, err = Open(context.Background(), dsn, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this meridian knows") {
		t.Fatalf("a schema from a newer meridian: %v", err)
	}
}

// A server that cannot be reached is an error naming where, without the
// password; nothing falls back.
func TestUnreachableServerIsNamed(t *testing.T) {
	start := time.Now()
	_, err := Open(context.Background(), "postgres://meridian:s3cret-pw@127.0.0.1:1/meridian?sslmode=disable", Options{ConnectTimeout: 3 * time.Second})
	if err == nil {
		t.Fatal("an unreachable server was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "127.0.0.1:1") || strings.Contains(msg, "s3cret-pw") {
		t.Fatalf("error %q: want the host and port, never the password", msg)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("gave up after %v", time.Since(start))
	}
	_, err = Open(context.Background(), "postgres://meridian:s3cret-pw@[::1/x", Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("a DSN that does not parse: %v", err)
	}
}

func TestPasswordInDSN(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for dsn, want := range map[string]bool{
		"postgres://meridian:pw@db:5432/m":       true,
		"postgres://meridian@db:5432/m":          false,
		"postgresql://db/m?password=pw":          true,
		"postgres://meridian@db/m?sslmode=allow": false,
	} {
		if got := HasPassword(dsn); got != want {
			t.Errorf("HasPassword(%q) = %v", dsn, got)
		}
	}
	t.Setenv("PGPASSWORD", "from-env")
	if HasPassword("postgres://meridian@db:5432/m") {
		t.Error("a password from the environment was taken for the DSN's own")
	}
}

// A claim that waits on the lease row while the lease's stalled holder
// commits a publish says the version that publish wrote: its statement's
// snapshot is older than the commit, so the row is read under a share
// lock, which reads it as committed. Without it a turn would run on the
// row as it was before the publish.
func TestALeaseTakenBehindAPublishSaysItsVersion(t *testing.T) {
	dsn := server(t).NewDatabase(t)
	s := open(t, dsn, Options{})
	ctx := context.Background()
	start := time.UnixMilli(1_700_000_000_000)
	a := store.LeaseClaim{Profile: "p", Key: "k", Token: "ta", Owner: store.Owner{Host: "a", Incarnation: "1"}, Now: start, TTL: time.Second}
	if g, err := s.Leases.Acquire(ctx, a); err != nil || !g.Taken {
		t.Fatalf("first claim: %+v, %v", g, err)
	}
	conv := store.Conversation{Profile: "p", Key: "k", Client: "c", SessionID: "s", Digests: []byte{}, Pins: "[]", Tail: []byte{}}
	if _, err := s.Conversations.Publish(ctx, conv, store.Publish{Fence: "ta", Now: start}); err != nil {
		t.Fatal(err)
	}

	// The holder's next publish, held open after its fence check: the
	// lease has expired meanwhile.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT token FROM turn_leases WHERE profile = 'p' AND key = 'k' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE conversations SET version = version + 1 WHERE profile = 'p' AND key = 'k'`); err != nil {
		t.Fatal(err)
	}

	b := a
	b.Token, b.Owner, b.Now = "tb", store.Owner{Host: "b", Incarnation: "1"}, start.Add(5*time.Second)
	type result struct {
		g   store.LeaseGrant
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := s.Leases.Acquire(ctx, b)
		done <- result{g, err}
	}()
	err = testkit.WaitFor(10*time.Second, func() error {
		var waiting int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting); err != nil {
			return err
		}
		if waiting == 0 {
			return fmt.Errorf("the claim does not wait yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.g.Taken || r.g.Version != 2 {
		t.Fatalf("the claim behind the publish: %+v, %v (want taken at version 2)", r.g, r.err)
	}
}
