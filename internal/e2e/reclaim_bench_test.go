package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// reclaimSides are the builds BenchmarkReclaim compares, each keeping n
// processes: MERIDIAN_BENCH_RECLAIM_BINS as "name=path,name=path", else
// this build.
func reclaimSides(n int) []benchSide {
	var sides []benchSide
	for _, part := range strings.Split(os.Getenv("MERIDIAN_BENCH_RECLAIM_BINS"), ",") {
		if name, bin, ok := strings.Cut(strings.TrimSpace(part), "="); ok {
			sides = append(sides, benchSide{name: name, bin: bin})
		}
	}
	if len(sides) == 0 {
		sides = []benchSide{{name: "now"}}
	}
	for i := range sides {
		sides[i].args = []string{"--max-live", fmt.Sprint(n), "--spares", "0"}
	}
	return sides
}

// BenchmarkReclaim measures new conversations that must each take the
// place of an idle one: a pool full of ten idle conversations (--max-live
// 10, no spares), then ten new conversations at once, each of which
// reclaims the least recently used idle process. It reports the burst's
// median wall and the most processes alive during it beyond the pool's
// size (reclaimed ones still exiting), per build, the builds' runs
// interleaved.
// MERIDIAN_BENCH_RUNS (default 1) sets the runs, MERIDIAN_BENCH_BURST
// (default 10) the pool's size and the burst's.
func BenchmarkReclaim(b *testing.B) {
	runs, n := benchEnv("MERIDIAN_BENCH_RUNS", 1), benchEnv("MERIDIAN_BENCH_BURST", 10)
	sides := reclaimSides(n)
	walls := map[string][]time.Duration{}
	over := map[string]int{}
	for i := 0; i < b.N; i++ {
		for r := range runs {
			for _, sd := range sides {
				g := fresh(b, sd)
				for j := range n {
					key := fmt.Sprintf("held-%d", j)
					g.timed(b, prompt(key), "X-Claude-Code-Session-Id", key)
				}
				time.Sleep(6 * time.Second) // idle, and frozen
				// The most claude processes alive while the burst runs:
				// the reclaimed ones still exiting beside those started.
				peak, done := 0, make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for {
						peak = max(peak, len(g.claudes()))
						select {
						case <-done:
							return
						case <-time.After(10 * time.Millisecond):
						}
					}
				})
				wall, _, _ := g.burst(b, fmt.Sprintf("reclaim-%d", r), n, 1)
				close(done)
				wg.Wait()
				alive := peak
				b.Logf("%s, run %d: %d new conversations in a full pool: %v wall; at most %d claude processes alive meanwhile", sd.name, r+1, n, wall.Round(time.Millisecond), alive)
				walls[sd.name] = append(walls[sd.name], wall)
				over[sd.name] = max(over[sd.name], alive-n)
				stop(g)
			}
		}
	}
	for _, sd := range sides {
		b.ReportMetric(testkit.Millis(testkit.Median(walls[sd.name])), fmt.Sprintf("%d-new-reclaiming-ms-", n)+sd.name)
		b.ReportMetric(float64(over[sd.name]), "reclaimed-alive-beside-max-"+sd.name)
	}
}
