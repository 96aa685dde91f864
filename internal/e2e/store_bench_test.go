package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// BenchmarkStoreEngines measures, side by side in one run against one fake
// upstream, turns 2–10 of conversations on their live claude processes
// through a meridian on the embedded SQLite store and one on a real
// PostgreSQL server over loopback, turn for turn alternately (and each first as often), with each
// meridian's own memory after the run.
func BenchmarkStoreEngines(b *testing.B) {
	up := testkit.NewUpstream(b)
	up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "answer to " + r.LastUserText()} })
	lite, pg := newHost(b, up), newHost(b, up)
	lite.start("--host", "127.0.0.2", "--spares", "0")
	pg.startOn("127.0.0.3", testkit.PostgresServer(b).NewDatabase(b))
	sides := []*gatewayProc{lite, pg}
	lat := make([][]time.Duration, len(sides))

	b.ResetTimer()
	for i := range b.N {
		histories := make([][]map[string]string, len(sides))
		for turn := 1; turn <= 10; turn++ {
			// Who goes first alternates too: a turn just answered still
			// costs its CLI some CPU.
			for k := range sides {
				s := (k + turn) % len(sides)
				g := sides[s]
				q := fmt.Sprintf("question %d", turn)
				histories[s] = append(histories[s], map[string]string{"role": "user", "content": q})
				body, _ := json.Marshal(map[string]any{"model": "bench-model", "max_tokens": 100, "messages": histories[s]})
				t0 := time.Now()
				resp, answer, err := g.post(string(body), "X-Claude-Code-Session-Id", fmt.Sprintf("engines-%d", i))
				d := time.Since(t0)
				if err != nil || resp.StatusCode != 200 || !strings.Contains(answer, "answer to "+q) {
					b.Fatalf("turn %d: %v %s", turn, err, answer)
				}
				if turn > 1 {
					lat[s] = append(lat[s], d)
				}
				histories[s] = append(histories[s], map[string]string{"role": "assistant", "content": "answer to " + q})
			}
		}
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	b.ReportMetric(p50(lat[0]), "sqlite-live-turn-p50-ms")
	b.ReportMetric(p50(lat[1]), "postgres-live-turn-p50-ms")
	b.ReportMetric(p50(lat[1])-p50(lat[0]), "postgres-extra-p50-ms")
	// The same turn of the same round on each side, paired: what the
	// machine's load did to both cancels out.
	diffs := make([]time.Duration, len(lat[0]))
	for i := range diffs {
		diffs[i] = lat[1][i] - lat[0][i]
	}
	b.ReportMetric(p50(diffs), "postgres-extra-paired-p50-ms")
	for s, name := range []string{"sqlite", "postgres"} {
		if n, ok := procmem.Process(sides[s].cmd.Process.Pid); ok {
			b.ReportMetric(float64(n)/(1<<20), name+"-meridian-pss-MiB")
		}
	}
}
