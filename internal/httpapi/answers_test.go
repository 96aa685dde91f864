package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/answers"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Without --api-key every key a client sends is a credential scope of its
// own. 40 keys, each with an 800 KB answer saved for its retries, hold no
// more memory than the saved answers' global bound (16 MiB here), where
// each scope's own bound alone let them keep all 32 MB. Not parallel: the
// heap is measured while nothing else runs.
func TestSavedAnswersOfManyKeysStayWithinTheGlobalBound(t *testing.T) {
	chunks := make([]string, 100)
	for i := range chunks {
		chunks[i] = strings.Repeat("y", 8000)
	}
	const keys = 40
	lim := answers.DefaultLimits()
	lim.TotalBytes = 16 << 20
	s := newStack(t, stackOptions{claudePath: "in-process", launcher: testkit.NewInProcessCLI(chunks), answers: lim})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range keys {
		c := s.client(option.WithAPIKey(fmt.Sprintf("key-%d", i)), option.WithHeader("Idempotency-Key", fmt.Sprintf("req-%d", i)))
		msg, err := c.Messages.New(context.Background(), simpleParams("a long answer, please"))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if n := len(msg.Content[0].Text); n != 800000 {
			t.Fatalf("request %d answered %d bytes", i, n)
		}
	}
	grown := int64(heap()) - int64(before)
	bound := lim.TotalBytes
	t.Logf("%d keys × 800 KB answers: the heap grew %.1f MiB (global bound %d MiB)", keys, float64(grown)/(1<<20), bound>>20)
	// The answers themselves are at most the bound; the rest is their
	// headers and the server's own bookkeeping.
	if grown > bound+bound/4 {
		t.Fatalf("the heap grew %d MiB with %d keys' saved answers, past the %d MiB bound", grown>>20, keys, bound>>20)
	}
	// The newest keys' answers are still replayed.
	last := fmt.Sprint(keys - 1)
	c := s.client(option.WithAPIKey("key-"+last), option.WithHeader("Idempotency-Key", "req-"+last))
	var resp *http.Response
	if _, err := c.Messages.New(context.Background(), simpleParams("a long answer, please"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Meridian-Replayed") != "true" {
		t.Fatal("the newest key's retry was not answered from its saved answer")
	}
}
