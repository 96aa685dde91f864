package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/sessiontree"
	"github.com/meridian-gw/meridian/internal/store"
)

// cascadeTopic is the signal that carries a session tree's cancels: "1 "
// (the conversation itself too) or "0 " (only what runs below it), then
// the conversation's key.
const cascadeTopic = "tree-cancel"

// spreadTimeout bounds one signal's send; a cancel is never held up by
// the store for longer.
const spreadTimeout = 2 * time.Second

// Cascade carries the session tree's cancels to every host sharing the
// store: a lead whose client left, or a conversation cancelled through
// the API, cancels the requests below it wherever they run. Each host
// walks its own tree and passes on what it cancelled, so a chain that
// crosses hosts more than once is followed to its end; a request is
// aborted once, so the passing on ends.
type Cascade struct {
	tree    *sessiontree.Tree
	signals store.Signals
	log     *slog.Logger
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewCascade listens for the cancels other hosts send to tree until
// Close.
func NewCascade(tree *sessiontree.Tree, signals store.Signals, log *slog.Logger) *Cascade {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cascade{tree: tree, signals: signals, log: log, stop: make(chan struct{})}
	heard, stop := signals.Listen(cascadeTopic)
	c.wg.Go(func() {
		defer stop()
		for {
			select {
			case <-c.stop:
				return
			case p := <-heard:
				c.heard(p)
			}
		}
	})
	return c
}

// Close stops listening and waits for the listener.
func (c *Cascade) Close() {
	close(c.stop)
	c.wg.Wait()
}

// Spread tells every host to cancel the requests below key (with self,
// key's own too) and below each conversation in cancelled, which this
// host has just cancelled.
func (c *Cascade) Spread(key string, self bool, cancelled []string) {
	c.send(key, self)
	for _, k := range cancelled {
		if k != key {
			c.send(k, false)
		}
	}
}

func (c *Cascade) send(key string, self bool) {
	flag := "0 "
	if self {
		flag = "1 "
	}
	ctx, cancel := context.WithTimeout(context.Background(), spreadTimeout)
	defer cancel()
	if err := c.signals.Notify(ctx, cascadeTopic, flag+key); err != nil {
		c.log.Warn("store: could not carry a cancel to the other hosts; what runs below it there runs on", "conversation", key, "err", err)
	}
}

// heard cancels here what another host's cancel reaches, and passes on
// what it cancelled. A host hears its own signals too: what they reach
// was aborted already, so nothing is cancelled twice.
func (c *Cascade) heard(payload string) {
	flag, key, ok := strings.Cut(payload, " ")
	if !ok || key == "" {
		return
	}
	var cancelled []string
	if flag == "1" {
		cancelled = c.tree.Cancel(key)
	} else {
		cancelled = c.tree.CancelBelow(key)
	}
	if len(cancelled) == 0 {
		return
	}
	c.log.Info("another host cancelled a conversation: cancelled what runs here below it", "conversation", key, "cancelled", cancelled)
	for _, k := range cancelled {
		c.send(k, false)
	}
}
