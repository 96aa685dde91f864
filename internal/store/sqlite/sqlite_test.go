package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestOpenMigratesOnceAndSharesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "meridian.db")
	ctx := context.Background()
	// Two processes opening at once: simulated by concurrent opens.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			db, err := Open(ctx, path)
			if err != nil {
				t.Error(err)
				return
			}
			defer db.Close()
			var v int
			if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(migrations()) {
				t.Errorf("user_version = %d, %v", v, err)
			}
		})
	}
	wg.Wait()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	if _, err := db.Exec(`INSERT INTO turn_leases (profile, key, token, host, incarnation, expires_at) VALUES ('p','k','t','h','i',1)`); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("a database from a newer meridian was accepted")
	}
}

// A database file that exists but is empty is refused, not silently made
// new: what it held (spawn ids, conversations) is gone, and reusing ids
// would write over what they left.
func TestEmptiedDatabaseIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meridian.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("Open of a 0-byte database: %v", err)
	}
	if st, _ := os.Stat(path); st.Size() != 0 {
		t.Fatal("the refused file was written to")
	}
	garbage := filepath.Join(t.TempDir(), "meridian.db")
	if err := os.WriteFile(garbage, []byte("not sqlite at all, certainly not a database header"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), garbage); err == nil || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("Open of a garbage file: %v", err)
	}
	fresh := filepath.Join(t.TempDir(), "new", "meridian.db")
	db, err := Open(context.Background(), fresh)
	if err != nil {
		t.Fatalf("a new database: %v", err)
	}
	db.Close()
}
