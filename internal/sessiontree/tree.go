// Package sessiontree keeps the live requests of conversations and the
// parent links clients declare between them (a subagent's conversation
// names the one that started it), so that aborting a request aborts the
// requests of every conversation below it. Pure bookkeeping: the caller
// supplies each request's abort and decides when to cascade.
//
// Three rules bound it. Abort, not completion: a parent that finishes
// does not cancel its children, which routinely outlive the turn that
// started them. Live requests only: an entry exists while its request
// runs, so the tree is bounded by concurrency, not history. Self-gating:
// only a request that declared a parent can be reached from above.
//
// One tree serves every profile of a process (a subagent may run under
// another profile than its lead); each request names its group (the
// profile) for the figures. A request is aborted once: a cancel reports
// only the conversations it newly aborted requests of, so that a cancel
// carried on to other hosts, and heard back, ends.
package sessiontree

import (
	"slices"
	"sync"
)

// maxDepth bounds a walk up the links: clients make the links, and a
// cycle or an absurd chain must not hang a cancel.
const maxDepth = 64

// Tree is the registry of live requests.
type Tree struct {
	mu        sync.Mutex
	next      uint64
	live      map[uint64]*entry
	cancelled map[string]uint64 // requests aborted through the tree, ever, per group
}

type entry struct {
	group, key, parent string
	abort              func()
	aborted            bool
}

// New returns an empty tree.
func New() *Tree { return &Tree{live: map[uint64]*entry{}, cancelled: map[string]uint64{}} }

// Enter registers a live request of conversation key in group, a child of
// conversation parent ("" for none), aborted by abort. Call leave when the
// request has settled.
func (t *Tree) Enter(group, key, parent string, abort func()) (leave func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	id := t.next
	t.live[id] = &entry{group: group, key: key, parent: parent, abort: abort}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.live, id)
	}
}

// Cancel aborts every live request of conversation key and of every
// conversation whose ancestry, through live requests' links, reaches key.
// It returns the conversations it aborted requests of (requests aborted
// before are not aborted again, nor counted), sorted. Aborts run after the
// tree's lock is released.
func (t *Tree) Cancel(key string) []string { return t.cancel(key, true) }

// CancelBelow aborts the live requests of every conversation that descends
// from key, but not those of key itself: a client that leaves one request
// of a conversation may already have sent its next one.
func (t *Tree) CancelBelow(key string) []string { return t.cancel(key, false) }

func (t *Tree) cancel(key string, self bool) []string {
	t.mu.Lock()
	parents := map[string]string{} // each live conversation's declared parent
	for _, e := range t.live {
		if e.parent != "" {
			parents[e.key] = e.parent
		}
	}
	var aborts []func()
	var keys []string
	for _, e := range t.live {
		if !e.aborted && (self || e.key != key) && reaches(e.key, key, parents) {
			e.aborted = true
			t.cancelled[e.group]++
			aborts = append(aborts, e.abort)
			if !slices.Contains(keys, e.key) {
				keys = append(keys, e.key)
			}
		}
	}
	t.mu.Unlock()
	for _, abort := range aborts {
		abort()
	}
	slices.Sort(keys)
	return keys
}

// reaches reports whether from is key or descends from it.
func reaches(from, key string, parents map[string]string) bool {
	for range maxDepth {
		if from == key {
			return true
		}
		p, ok := parents[from]
		if !ok {
			return false
		}
		from = p
	}
	return false
}

// Gauges are the tree's live figures.
type Gauges struct {
	Requests  int    `json:"requests"`  // live requests
	Linked    int    `json:"linked"`    // of which declared a parent
	Cancelled uint64 `json:"cancelled"` // requests aborted through the tree, ever
}

// Stats reports one group's gauges and live requests per conversation.
func (t *Tree) Stats(group string) (Gauges, map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := Gauges{Cancelled: t.cancelled[group]}
	per := map[string]int{}
	for _, e := range t.live {
		if e.group != group {
			continue
		}
		g.Requests++
		per[e.key]++
		if e.parent != "" {
			g.Linked++
		}
	}
	return g, per
}

// Live reports whether conversation key has a request running.
func (t *Tree) Live(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.live {
		if e.key == key {
			return true
		}
	}
	return false
}
