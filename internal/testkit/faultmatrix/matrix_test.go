//go:build faultmatrix

package faultmatrix

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// TestMatrix runs every probe in turn on one cluster (several kill or
// stop a host, which the next one starts again) and prints each probe's
// figure at the end. A failed probe does not stop the others.
func TestMatrix(t *testing.T) {
	c := newCluster(t)
	f := &figures{}
	probes := []struct {
		name string
		run  func(*testing.T, *cluster, *figures)
	}{
		{"turns through the balancer", turnsThroughTheBalancer},
		{"holder killed mid-stream", holderKilledMidStream},
		{"holder paused mid-stream", holderPausedMidStream},
		{"duplicate on another host", duplicateOnAnotherHost},
		{"holder dies under a named request", holderDiesUnderANamedRequest},
		{"background response on the holder", backgroundOnTheHolder},
		{"retry at the last byte", retryAfterTheLastByte},
		{"drain keeps health", drainKeepsHealth},
		{"header bounds", headerBounds},
		{"raw HTTP oddities", rawOddities},
		{"hostile bodies", hostileBodies},
		{"store outage", storeOutage},
		// Keys close the gateway to keyless clients: last but one.
		{"keys never share a conversation", keysApart},
		{"shutdown leaves no process", shutdownLeavesNothing},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) { p.run(t, c, f) })
	}
	t.Log("figures:\n" + strings.Join(f.lines, "\n"))
}

// keysApart: two keys whose clients send one session id hold two
// conversations, each continued without a replay of the other's.
func keysApart(t *testing.T, c *cluster, f *figures) {
	c.balanced(t)
	keys := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		out, err := exec.Command(c.hosts[0].bin, "key", "add", who, "--json", "--store", c.hosts[0].dsn,
			"--data-dir", c.hosts[0].data).Output()
		var v struct{ Key string }
		if err != nil || json.Unmarshal(out, &v) != nil {
			t.Fatalf("key add %s: %v %s", who, err, out)
		}
		keys[who] = v.Key
	}
	// Every host reads the keys again within a second.
	if err := testkit.WaitFor(10*time.Second, func() error {
		for _, h := range c.hosts {
			if s := getStatus(h.url() + "/v1/models"); s != http.StatusUnauthorized {
				return fmt.Errorf("host %s answers a keyless request %d", h.ip, s)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	history := map[string][]string{}
	var replayed, mixed int
	for turn := 1; turn <= 2; turn++ {
		for _, who := range []string{"alice", "bob"} {
			q := who + " asks question " + string(rune('0'+turn))
			history[who] = append(history[who], q)
			resp, body, err := post(c.lb, "/v1/messages", messagesBody(false, history[who]...), "X-Api-Key", keys[who],
				"X-Claude-Code-Session-Id", "shared-by-two-keys")
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to "+q) {
				t.Fatalf("%s's turn %d: %v %v %s", who, turn, err, resp, body)
			}
			if resp.Header.Get("X-Meridian-Replayed") != "" {
				replayed++
			}
			history[who] = append(history[who], "answer to "+q)
			if turn == 2 {
				reqs := c.up.Requests()
				all := reqs[len(reqs)-1].AllText()
				other := map[string]string{"alice": "bob", "bob": "alice"}[who]
				if strings.Contains(all, "<conversation_history>") || strings.Contains(all, other+" asks") {
					mixed++
				}
			}
		}
	}
	if replayed+mixed > 0 {
		t.Errorf("%d answers replayed, %d turns carried the other key's conversation", replayed, mixed)
	}
	f.add(t, "two keys, one session id: 4 turns, %d replayed, %d mixed", replayed, mixed)
}

// shutdownLeavesNothing: SIGTERM to every host; each exits and no CLI
// process of any host is left.
func shutdownLeavesNothing(t *testing.T, c *cluster, f *figures) {
	start := time.Now()
	for _, h := range c.hosts {
		if h.running() {
			h.signal(syscall.SIGTERM)
		}
	}
	for _, h := range c.hosts {
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("host %s did not exit", h.ip)
		}
	}
	left := 0
	for _, h := range c.hosts {
		testkit.WaitNoProcesses(t, h.marker, 5*time.Second)
		left += len(testkit.Processes(h.marker))
	}
	f.add(t, "all hosts exited %v after SIGTERM, %d processes left", time.Since(start).Round(10*time.Millisecond), left)
}
