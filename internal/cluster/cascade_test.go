package cluster

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/sessiontree"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Three hosts on one store's signals: a lead's cancel on the first
// reaches its subagent on the second and that one's own subagent on the
// third, each aborted once, and the passing on ends.
func TestCascadeFollowsAChainAcrossHosts(t *testing.T) {
	hub := sqlstore.NewHub(nil) // one process's signals stand for the store's
	var mu sync.Mutex
	var aborted []string
	abort := func(key string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			aborted = append(aborted, key)
		}
	}
	var trees []*sessiontree.Tree
	var cascades []*Cascade
	for range 3 {
		tr := sessiontree.New()
		c := NewCascade(tr, hub, nil)
		defer c.Close()
		trees, cascades = append(trees, tr), append(cascades, c)
	}
	trees[0].Enter("p", "lead", "", abort("lead"))
	trees[1].Enter("p", "lead#sub", "lead", abort("lead#sub"))
	trees[2].Enter("q", "lead#sub#deep", "lead#sub", abort("lead#sub#deep"))
	trees[2].Enter("q", "other", "", abort("other"))

	cascades[0].Spread("lead", false, trees[0].CancelBelow("lead"))
	if err := testkit.WaitFor(5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(aborted) < 2 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("aborted %v", aborted)
	}
	time.Sleep(100 * time.Millisecond) // anything more would come now
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(aborted)
	if !slices.Equal(aborted, []string{"lead#sub", "lead#sub#deep"}) {
		t.Fatalf("aborted %v", aborted)
	}
}
