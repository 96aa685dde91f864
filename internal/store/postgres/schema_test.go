package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/meridian-gw/meridian/internal/store/sqlite"
)

// Tables only the local SQLite file holds: spawns stay on their host, and
// each engine keeps its schema version its own way.
var localOnly = []string{"spawn_counters", "spawns", "spawn_consumed", "spawn_leases", "meridian_schema"}

// The two engines hold one schema: every shared table, with the same
// columns, in a fresh SQLite file and a fresh PostgreSQL database, after
// each engine's migrations. The statements in sqlstore are written once
// for both; a column one engine's migration forgot would fail only on
// that engine, at run time.
func TestTheEnginesHoldOneSchema(t *testing.T) {
	dsn := server(t).NewDatabase(t)
	_ = open(t, dsn, Options{})
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	pg := columnsOf(t, rows)
	rows.Close()

	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meridian.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	liteRows, err := db.Query(`SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer liteRows.Close()
	lite := columnsOf(t, liteRows)

	if len(pg) < 10 || len(lite) < 10 {
		t.Fatalf("read %d PostgreSQL and %d SQLite tables", len(pg), len(lite))
	}
	var diffs []string
	for _, table := range union(pg, lite) {
		if slices.Contains(localOnly, table) {
			continue
		}
		p, l := pg[table], lite[table]
		if !slices.Contains(l, dialect().RowID) {
			// PostgreSQL's stand-in for SQLite's implicit rowid, which
			// orders rows by insertion where the dialect says {rowid}.
			p = slices.DeleteFunc(slices.Clone(p), func(c string) bool { return c == dialect().RowID })
		}
		switch {
		case p == nil:
			diffs = append(diffs, fmt.Sprintf("%s: only in SQLite", table))
		case l == nil:
			diffs = append(diffs, fmt.Sprintf("%s: only in PostgreSQL", table))
		case !slices.Equal(p, l):
			diffs = append(diffs, fmt.Sprintf("%s: PostgreSQL has %v, SQLite %v", table, p, l))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("the engines' schemas differ:\n%s", strings.Join(diffs, "\n"))
	}
	t.Logf("%d shared tables alike", len(union(pg, lite))-len(localOnly))
}

// columnsOf reads (table, column) rows, of either engine's driver, into
// each table's sorted columns.
func columnsOf(t *testing.T, rows interface {
	Next() bool
	Scan(...any) error
}) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], column)
	}
	for _, cols := range out {
		slices.Sort(cols)
	}
	return out
}

func union(a, b map[string][]string) []string {
	var names []string
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
