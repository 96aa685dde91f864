package gateway

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/meridian-gw/meridian/internal/adapter"
	"github.com/meridian-gw/meridian/internal/sessiontree"
)

// A client that leaves before its answer is complete aborts the
// conversations below it; one that leaves once the answer's end is being
// written aborts nothing: its answer was delivered.
func TestLeavingCascadesOnlyBeforeTheAnswerEnds(t *testing.T) {
	for _, finished := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			g := &Gateway{tree: sessiontree.New(), log: slog.New(slog.DiscardHandler)}
			aborted := false
			defer g.tree.Enter("", "lead#a", "lead", func() { aborted = true })()

			ctx, cancel := context.WithCancel(t.Context())
			_, out, leave := g.enterTree(ctx, adapter.Identity{Key: "lead"}, &record{})
			defer leave()
			if finished {
				if err := out.Finish(Finish{StopReason: "end_turn"}); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			synctest.Wait()
			if aborted == finished {
				t.Fatalf("answer finished %v: the subagent aborted %v", finished, aborted)
			}
		})
	}
}
