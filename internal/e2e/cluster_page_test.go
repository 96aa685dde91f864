package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// clusterHosts is GET /cluster as a test reads it.
type clusterHosts struct {
	Host  string
	Hosts []struct {
		Host    string
		Addr    string
		State   string
		Running int `json:"running_turns"`
		Self    bool
	}
}

func (c clusterHosts) state(host string) string {
	for _, h := range c.Hosts {
		if h.Host == host {
			return h.State
		}
	}
	return "absent"
}

// Three hosts on one store, seen from one of them: each is listed with
// the address it listens at, a host that drains says so at once (its
// /ready turns load balancers away while its running turn finishes), and
// one killed outright is listed gone once its heartbeat expires. The page
// shows the same, in a real browser.
func TestClusterShowsEveryHostsState(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up := testkit.NewUpstream(t)
	gate := make(chan struct{})
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "slow") {
			return testkit.Reply{Text: "slow answer", Gate: gate}
		}
		return testkit.Reply{Text: "ok"}
	})
	a, b, c := newHost(t, up), newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn)
	b.startOn("127.0.0.3", dsn)
	c.startOn("127.0.0.4", dsn)
	var ids [3]string
	for i, g := range []*gatewayProc{a, b, c} {
		var ready struct{ Status, Host string }
		g.getJSON("/ready", &ready)
		if ready.Status != "ready" {
			t.Fatalf("/ready of a serving host: %+v", ready)
		}
		ids[i] = ready.Host
	}
	var view clusterHosts
	a.getJSON("/cluster", &view)
	if len(view.Hosts) != 3 || !view.Hosts[0].Self || view.Hosts[0].Host != ids[0] {
		t.Fatalf("/cluster on a: %+v", view)
	}
	for i, g := range []*gatewayProc{a, b, c} {
		for _, h := range view.Hosts {
			if h.Host == ids[i] && (h.Addr != g.url || h.State != "serving") {
				t.Fatalf("host %s is listed as %+v, listening at %s", ids[i], h, g.url)
			}
		}
	}

	// c drains with a turn running.
	slow := c.postAsync(prompt("slow"))
	waitRequests(t, up, 1)
	c.drain(t)
	// It told the store as it began to drain.
	if err := testkit.WaitFor(2*time.Second, func() error {
		if a.getJSON("/cluster", &view); view.state(ids[2]) != "draining" {
			return fmt.Errorf("the draining host, seen from a: %+v", view)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// b is killed outright: gone once its heartbeat expires (3 s here).
	b.kill9()
	killed := time.Now()
	if err := testkit.WaitFor(10*time.Second, func() error {
		if a.getJSON("/cluster", &view); view.state(ids[1]) != "gone" {
			return fmt.Errorf("b is %s", view.state(ids[1]))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("a killed host was listed gone %v after the kill", time.Since(killed).Round(100*time.Millisecond))

	br := newBrowser(t)
	br.do(t, chromedp.Navigate(a.url+"/cluster"), chromedp.WaitVisible(chromedp.CSS("#hosts")))
	rows := count(t, br, "tr.host")
	states := map[string]int{}
	for _, r := range rows {
		states[r.AttributeValue("data-state")]++
	}
	if len(rows) != 3 || states["serving"] != 1 || states["draining"] != 1 || states["gone"] != 1 {
		t.Errorf("the cluster page shows %d hosts: %v", len(rows), states)
	}
	br.screenshot(t, "cluster")
	br.do(t, chromedp.Navigate(a.url+"/"))
	if links := count(t, br, `nav a[href="/cluster"]`); len(links) != 1 {
		t.Error("the pages do not link to the cluster page")
	}
	br.clean(t)

	// c's running turn finishes, and c leaves.
	close(gate)
	if got := <-slow; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "slow answer") {
		t.Fatalf("the turn running on the draining host: %s", got)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("c after its drain: %v", err)
	}
	if a.getJSON("/cluster", &view); view.state(ids[2]) != "absent" {
		t.Fatalf("a host that stopped cleanly is still listed: %+v", view)
	}
}

// waitRequests waits until the upstream has had n requests.
func waitRequests(t *testing.T, up *testkit.Upstream, n int) {
	t.Helper()
	if err := testkit.WaitFor(20*time.Second, func() error {
		if got := len(up.Requests()); got < n {
			return fmt.Errorf("the upstream has had %d requests, want %d", got, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// drain sends the host SIGTERM and waits until its /ready says it drains:
// 503 with a wait.
func (g *gatewayProc) drain(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := testkit.WaitFor(5*time.Second, func() error {
		resp, err := http.Get(g.url + "/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			return fmt.Errorf("/ready of a draining host: %d", resp.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// postAsync sends a Messages request in the background; the channel gets
// "<status> <body>" once it is answered, or the error.
func (g *gatewayProc) postAsync(body string, header ...string) <-chan string {
	done := make(chan string, 1)
	go func() {
		resp, answer, err := g.post(body, header...)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- fmt.Sprint(resp.StatusCode, " ", answer)
	}()
	return done
}
