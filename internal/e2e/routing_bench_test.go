package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// conversationTurn sends turn n of conversation key (its history
// rebuilt) through g and returns how long its answer took.
func conversationTurn(b *testing.B, g *gatewayProc, key string, n int) time.Duration {
	var history []map[string]string
	for i := 1; i <= n; i++ {
		history = append(history, map[string]string{"role": "user", "content": fmt.Sprintf("question %d", i)})
		if i < n {
			history = append(history, map[string]string{"role": "assistant", "content": fmt.Sprintf("answer to question %d", i)})
		}
	}
	body, _ := json.Marshal(map[string]any{"model": "bench-model", "max_tokens": 100, "messages": history})
	t0 := time.Now()
	resp, answer, err := g.post(string(body), "X-Claude-Code-Session-Id", key)
	d := time.Since(t0)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(answer, fmt.Sprintf("answer to question %d", n)) {
		b.Fatalf("turn %d of %s: %v %s", n, key, err, answer)
	}
	return d
}

func p50ms(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

func benchUpstream(b *testing.B) *testkit.Upstream {
	up := testkit.NewUpstream(b)
	up.Respond(func(r testkit.Request) testkit.Reply {
		// A replayed history arrives as one message: its last line is the
		// question.
		last := r.LastUserText()
		return testkit.Reply{Text: "answer to " + last[strings.LastIndex(last, "\n")+1:]}
	})
	return up
}

// BenchmarkForwardedTurn measures, side by side in one run, a live turn
// sent to the host that holds its conversation and the same kind of turn
// sent to another host, which relays it there: turns 2–10 of two
// conversations held by one host, turn for turn.
func BenchmarkForwardedTurn(b *testing.B) {
	up := benchUpstream(b)
	dsn := testkit.PostgresServer(b).NewDatabase(b)
	holder, relay := newHost(b, up), newHost(b, up)
	holder.startOn("127.0.0.2", dsn, "--cluster-key", "bench-key")
	relay.startOn("127.0.0.3", dsn, "--cluster-key", "bench-key")
	var direct, forwarded, hops []time.Duration
	b.ResetTimer()
	for i := range b.N {
		d, f := fmt.Sprintf("direct-%d", i), fmt.Sprintf("forwarded-%d", i)
		conversationTurn(b, holder, d, 1)
		conversationTurn(b, holder, f, 1)
		for n := 2; n <= 10; n++ {
			// Each goes first as often: a turn just answered still costs
			// its CLI some CPU.
			var x, y time.Duration
			if n%2 == 0 {
				x, y = conversationTurn(b, holder, d, n), conversationTurn(b, relay, f, n)
			} else {
				y, x = conversationTurn(b, relay, f, n), conversationTurn(b, holder, d, n)
			}
			direct, forwarded, hops = append(direct, x), append(forwarded, y), append(hops, y-x)
		}
	}
	b.StopTimer()
	b.ReportMetric(p50ms(direct), "direct-turn-p50-ms")
	b.ReportMetric(p50ms(forwarded), "forwarded-turn-p50-ms")
	b.ReportMetric(p50ms(forwarded)/p50ms(direct), "forwarded-x-direct")
	b.ReportMetric(p50ms(hops), "hop-paired-p50-ms")
	// The hop itself, free of the CLI's variance: what the relaying host
	// took for each turn beyond what the holder took for it, from their
	// request logs.
	var relayed, held []time.Duration
	// A host logs a request once its answer is out: the last line may
	// come just after the client read the answer.
	if err := testkit.WaitFor(5*time.Second, func() error {
		relayed, held = tookOf(relay.log.String(), false), tookOf(holder.log.String(), true)
		if len(relayed) != len(held) || len(relayed) == 0 {
			return fmt.Errorf("%d relayed requests logged, %d arrived relayed", len(relayed), len(held))
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	own := make([]time.Duration, len(relayed))
	for i := range relayed {
		own[i] = relayed[i] - held[i]
	}
	b.ReportMetric(float64(p50ms(own)), "hop-own-p50-ms")
}

// tookOf reads the request log's times for POST /v1/messages: those that
// arrived relayed, or the others.
func tookOf(log string, via bool) []time.Duration {
	var out []time.Duration
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "msg=request") || !strings.Contains(line, "path=/v1/messages ") || strings.Contains(line, " via=") != via {
			continue
		}
		i := strings.Index(line, " took=")
		if i < 0 {
			continue
		}
		d, err := time.ParseDuration(strings.Fields(line[i+len(" took="):])[0])
		if err == nil {
			out = append(out, d)
		}
	}
	return out
}

// BenchmarkRoundRobinTurns measures turns 2–10 of conversations whose
// requests go round robin over three hosts, with routing to the holder
// (--cluster-key) beside without (each host answers what it receives,
// resuming or replaying), in one run, with each side's whole-tree memory
// after its turns.
func BenchmarkRoundRobinTurns(b *testing.B) {
	up := benchUpstream(b)
	pg := testkit.PostgresServer(b)
	sides := map[string][]*gatewayProc{}
	for side, ips := range map[string][]string{"routed": {"127.0.0.2", "127.0.0.3", "127.0.0.4"}, "unrouted": {"127.0.0.5", "127.0.0.6", "127.0.0.7"}} {
		dsn := pg.NewDatabase(b)
		for _, ip := range ips {
			g := newHost(b, up)
			args := []string{}
			if side == "routed" {
				args = append(args, "--cluster-key", "bench-key")
			}
			g.startOn(ip, dsn, args...)
			sides[side] = append(sides[side], g)
		}
	}
	lat := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for n := 1; n <= 10; n++ {
			order := []string{"routed", "unrouted"}
			if n%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, side := range order {
				d := conversationTurn(b, sides[side][(n-1)%3], fmt.Sprintf("rr-%s-%d", side, i), n)
				if n > 1 {
					lat[side] = append(lat[side], d)
				}
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(p50ms(lat["routed"]), "routed-turn-p50-ms")
	b.ReportMetric(p50ms(lat["unrouted"]), "unrouted-turn-p50-ms")
	b.ReportMetric(p50ms(lat["unrouted"])/p50ms(lat["routed"]), "x-faster-routed")
	for _, side := range []string{"routed", "unrouted"} {
		var pss int64
		for _, g := range sides[side] {
			pss += g.treePSS()
		}
		b.ReportMetric(float64(pss)/(1<<20), side+"-tree-pss-MiB")
	}
}
