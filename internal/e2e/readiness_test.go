package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// probe asks a host's /ready or /health: its status and body.
func (g *gatewayProc) probe(path string) (int, string, error) {
	resp, err := http.Get(g.url + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.Header.Get("Retry-After") == "" {
		return resp.StatusCode, string(body), fmt.Errorf("%s answered %d without a wait", path, resp.StatusCode)
	}
	return resp.StatusCode, string(body), nil
}

// waitProbe waits until every host's path answers status.
func waitProbe(t *testing.T, hosts []*gatewayProc, path string, status int, within time.Duration) {
	t.Helper()
	for _, g := range hosts {
		if err := testkit.WaitFor(within, func() error {
			got, body, err := g.probe(path)
			if err != nil {
				return err
			}
			if got != status {
				return fmt.Errorf("%s of %s: %d %s", path, g.url, got, body)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// Three hosts on one PostgreSQL: while the store is out of reach every
// host's /ready says so (a balancer stops sending requests that would
// all get a 503) and comes back with it; a host that drains answers
// /ready 503 and /health 200 all through its drain, so a supervisor's
// liveness check never restarts it in the middle.
func TestReadinessFollowsTheStoreAndTheDrain(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up, gate := gatedUpstream(t)
	var hosts []*gatewayProc
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		g := newHost(t, up)
		g.startOn(ip, dsn, "--store-timeout", "1s")
		hosts = append(hosts, g)
	}
	waitProbe(t, hosts, "/ready", http.StatusOK, 5*time.Second)
	waitProbe(t, hosts, "/health", http.StatusOK, 20*time.Second)

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitProbe(t, hosts, "/ready", http.StatusServiceUnavailable, 15*time.Second)
	t.Logf("every /ready said 503 %v after the store stopped (heartbeats every 1 s)", time.Since(stopped).Round(100*time.Millisecond))
	if _, body, _ := hosts[0].probe("/ready"); !strings.Contains(body, `"status":"store_unreachable"`) || strings.Contains(body, pg.Addr()) {
		t.Fatalf("/ready during the outage: %s", body)
	}
	if resp, body, err := hosts[0].post(prompt("during"), "X-Claude-Code-Session-Id", "during"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a model request during the outage: %v %v %s", err, resp, body)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	waitProbe(t, hosts, "/ready", http.StatusOK, 15*time.Second)
	t.Logf("every /ready said 200 again %v after the store was back", time.Since(started).Round(100*time.Millisecond))

	c := hosts[2]
	running := c.postAsync(prompt("slow"), "X-Claude-Code-Session-Id", "draining")
	waitUpstreamHas(t, up, "slow")
	c.drain(t)
	for range 3 {
		status, body, err := c.probe("/health")
		if err != nil || status != http.StatusOK {
			t.Fatalf("/health of a draining host: %d %v %s", status, err, body)
		}
		var health struct{ Draining bool }
		if json.Unmarshal([]byte(body), &health); !health.Draining {
			t.Fatalf("/health of a draining host does not say it drains: %s", body)
		}
		if status, _, _ := c.probe("/ready"); status != http.StatusServiceUnavailable {
			t.Fatalf("/ready of a draining host: %d", status)
		}
		time.Sleep(300 * time.Millisecond)
	}
	close(gate)
	if got := <-running; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the turn running through the drain: %s", got)
	}
}

// gatedUpstream answers "answer to" the last user text, and holds any
// prompt with "slow" in it until gate closes.
func gatedUpstream(t *testing.T) (*testkit.Upstream, chan struct{}) {
	up := testkit.NewUpstream(t)
	gate := make(chan struct{})
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "slow") {
			return testkit.Reply{Text: "slow answer", Gate: gate}
		}
		return testkit.Reply{Text: "answer to " + r.LastUserText()}
	})
	return up, gate
}
