package modelalias

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func aliases(t *testing.T) store.Aliases {
	t.Helper()
	return sqlitetest.Open(t).Aliases
}

func TestCheckRefusesWhatCouldNotBeUsed(t *testing.T) {
	for _, c := range []struct{ name, model, effort, want string }{
		{"gpt 4o", "claude-sonnet-5", "", "printable ASCII"},
		{"gpt-4o", "", "", "1 to 256"},
		{"opus", "opus", "", "itself"},
		{"default", "claude-haiku-5", "", "not an alias"},
		{"fast", "claude-haiku-5", "turbo", "--effort"},
	} {
		if err := Check(c.name, c.model, c.effort); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q, %q, %q) = %v, want an error naming %q", c.name, c.model, c.effort, err, c.want)
		}
	}
	if err := Check("gpt-4o", "claude-sonnet-5", "high"); err != nil {
		t.Fatal(err)
	}
}

// The store's aliases win over the settings file's of the same name, a
// change is seen once the book's second has passed, and what was read
// stands while the store cannot be read.
func TestBookReadsTheStoreOverTheSettings(t *testing.T) {
	st, ctx := aliases(t), context.Background()
	b := NewBook(st, []Alias{{Name: "gpt-4o", Model: "claude-haiku-5"}, {Name: "fast", Model: "claude-haiku-5", Effort: "low"}})
	if a, ok := b.Resolve(ctx, "gpt-4o", t0); !ok || a.Model != "claude-haiku-5" || a.Source != FromSettings {
		t.Fatalf("from the settings: %+v %v", a, ok)
	}
	if err := Add(ctx, st, "gpt-4o", "claude-sonnet-5", "high", t0); err != nil {
		t.Fatal(err)
	}
	if a, _ := b.Resolve(ctx, "gpt-4o", t0.Add(time.Second/2)); a.Model != "claude-haiku-5" {
		t.Fatalf("read again within the second: %+v", a)
	}
	if a, _ := b.Resolve(ctx, "gpt-4o", t0.Add(time.Second)); a.Model != "claude-sonnet-5" || a.Effort != "high" || a.Source != FromStore {
		t.Fatalf("after the second: %+v", a)
	}
	if _, ok := b.Resolve(ctx, "claude-sonnet-5", t0.Add(time.Second)); ok {
		t.Fatal("a model that is no alias resolved")
	}
	list := b.List(ctx, t0.Add(time.Second))
	if len(list) != 2 || list[0].Name != "fast" || list[1].Name != "gpt-4o" {
		t.Fatalf("list = %+v", list)
	}
	if err := Remove(ctx, st, "gpt-4o"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, st, "gpt-4o"); err == nil || !strings.Contains(err.Error(), "no alias") {
		t.Fatalf("removing twice: %v", err)
	}
	if a, _ := b.Resolve(ctx, "gpt-4o", t0.Add(2*time.Second)); a.Source != FromSettings {
		t.Fatalf("with the store's alias removed, the settings' answers: %+v", a)
	}
}

func TestANilBookHasNoAliases(t *testing.T) {
	var b *Book
	if _, ok := b.Resolve(context.Background(), "gpt-4o", t0); ok || b.List(context.Background(), t0) != nil {
		t.Fatal("a nil book resolved something")
	}
}
