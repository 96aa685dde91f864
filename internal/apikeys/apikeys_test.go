package apikeys

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
)

var now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func keys(t *testing.T) store.Keys {
	t.Helper()
	return sqlitetest.Open(t).Keys
}

func TestAKeyIsShownOnceAndKeptAsADigest(t *testing.T) {
	ks, ctx := keys(t), context.Background()
	v, err := Add(ctx, ks, Spec{Name: "pi", RPM: 5}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Key, keyrule.Prefix) || len(v.Key) < 20 {
		t.Fatalf("key %q", v.Key)
	}
	k, err := ks.ByDigest(ctx, keyrule.Digest(v.Key))
	if err != nil || k.Name != "pi" || k.Digest == v.Key {
		t.Fatalf("stored %+v, %v", k, err)
	}
	shown, _ := Show(ctx, ks, "pi", now)
	list, _ := List(ctx, ks, now)
	if shown.Key != "" || len(list) != 1 || list[0].Key != "" {
		t.Fatal("the key was shown again")
	}
	r, err := Rotate(ctx, ks, "pi", now)
	if err != nil || r.Key == "" || r.Key == v.Key {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	if _, err := Revoke(ctx, ks, "pi", now); err != nil {
		t.Fatal(err)
	}
	if _, err := Rotate(ctx, ks, "pi", now); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("rotating a revoked key: %v", err)
	}
	if shown, _ := Show(ctx, ks, "pi", now); shown.Status != "revoked" {
		t.Fatalf("status %q", shown.Status)
	}
}

func TestBadSpecsAreRefused(t *testing.T) {
	ks, ctx := keys(t), context.Background()
	for name, s := range map[string]Spec{
		"name":    {Name: "a b"},
		"pattern": {Name: "x", Models: []string{"claude-["}},
		"count":   {Name: "x", RPM: -1},
		"past":    {Name: "x", Expires: now.Add(-time.Hour)},
	} {
		if _, err := Add(ctx, ks, s, now); err == nil {
			t.Errorf("%s: accepted %+v", name, s)
		}
	}
	if _, err := Add(ctx, ks, Spec{Name: "dup"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(ctx, ks, Spec{Name: "dup"}, now); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second key of one name: %v", err)
	}
	if _, err := Show(ctx, ks, "nobody", now); err == nil || !strings.Contains(err.Error(), "no key named") {
		t.Errorf("an unknown name: %v", err)
	}
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Time{
		"":                     {},
		"2027-01-31":           time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31T12:00:00Z": time.Date(2027, 1, 31, 12, 0, 0, 0, time.UTC),
		"30d":                  now.AddDate(0, 0, 30),
		"12h":                  now.Add(12 * time.Hour),
	} {
		got, err := ParseExpiry(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"soon", "-3d", "0d", "3dd", "-1h"} {
		if _, err := ParseExpiry(bad, now); err == nil {
			t.Errorf("ParseExpiry(%q) accepted", bad)
		}
	}
}
