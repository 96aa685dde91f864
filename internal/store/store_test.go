package store

import (
	"context"
	"path/filepath"
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
	if _, err := db.Exec(`INSERT INTO turn_leases (profile, key, owner, expires_at) VALUES ('p','k','o',1)`); err != nil {
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
