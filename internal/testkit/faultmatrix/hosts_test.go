//go:build faultmatrix

package faultmatrix

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"
)

// figures collects one line per probe for the summary at the end.
type figures struct {
	mu    sync.Mutex
	lines []string
}

func (f *figures) add(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	f.mu.Lock()
	f.lines = append(f.lines, fmt.Sprintf("%-44s %s", t.Name(), line))
	f.mu.Unlock()
}

// turnsThroughTheBalancer: one conversation's six turns, round robin over
// the hosts, are all answered by the one that holds it.
func turnsThroughTheBalancer(t *testing.T, c *cluster, f *figures) {
	c.balanced(t)
	turns := []string{}
	holders := map[string]int{}
	for i := 1; i <= 6; i++ {
		q := fmt.Sprintf("balanced question %d", i)
		turns = append(turns, q)
		resp, body, err := post(c.lb, "/v1/messages", messagesBody(false, turns...), "X-Claude-Code-Session-Id", "balanced")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to "+q) {
			t.Fatalf("turn %d: %v %v %s", i, err, resp, body)
		}
		holders[resp.Header.Get("X-Meridian-Host")]++
		turns = append(turns, "answer to "+q)
	}
	if len(holders) != 1 {
		t.Errorf("six turns answered by %v", holders)
	}
	f.add(t, "6 turns round robin, answered by %d host(s)", len(holders))
}

// holderKilledMidStream: turn 2 relayed through b from a, which is killed
// with SIGKILL after the answer's fourth word; the client must hear its
// API's own error, not a stream that just stops.
func holderKilledMidStream(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	apis := []struct {
		name, path string
		body       func(stream bool, turns ...string) string
		failed     string
	}{
		{"messages", "/v1/messages", messagesBody, "event: error"},
		{"chat", "/v1/chat/completions", chatBody, `"error"`},
		{"responses", "/v1/responses", func(s bool, turns ...string) string { return responsesBody(s, false, turns...) }, "response.failed"},
	}
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			a.ensure()
			conv := "killed-" + api.name
			resp, body, err := post(a.url(), api.path, api.body(false, "hello"), "X-Claude-Code-Session-Id", conv)
			if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Meridian-Host") != a.id {
				t.Fatalf("turn 1 through a: %v %v %s", err, resp, body)
			}
			var killed time.Time
			status, lines, rerr := stream(b.url(), api.path, api.body(true, "hello", "answer to hello", "tell me a long story"), func(line string) {
				if strings.Contains(line, "time ") && killed.IsZero() {
					a.kill9()
					killed = time.Now()
				}
			}, "X-Claude-Code-Session-Id", conv)
			all := strings.Join(lines, "\n")
			ok := status == http.StatusOK && !killed.IsZero() && strings.Contains(all, api.failed) &&
				strings.Contains(all, "stopped in the middle of its answer")
			if !ok {
				t.Errorf("status %d, read %v, the stream after the kill:\n%s", status, rerr, tail(lines, 6))
			}
			f.add(t, "ended with %s %v after SIGKILL: %v", api.failed, time.Since(killed).Round(10*time.Millisecond), ok)
		})
	}
}

// holderPausedMidStream: a holder stopped with SIGSTOP mid-answer; the
// relaying host pings its client and ends with an error once the holder's
// heartbeat has expired.
func holderPausedMidStream(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	a.ensure()
	if resp, body, err := post(a.url(), "/v1/messages", messagesBody(false, "hello"), "X-Claude-Code-Session-Id", "paused"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 through a: %v %s", err, body)
	}
	var stopped, errored time.Time
	pings := 0
	_, lines, _ := stream(b.url(), "/v1/messages", messagesBody(true, "hello", "answer to hello", "tell me a long story"), func(line string) {
		switch {
		case strings.Contains(line, "time ") && stopped.IsZero():
			a.signal(procgroup.Freeze)
			stopped = time.Now()
		case line == "event: ping" && !stopped.IsZero():
			pings++
		case line == "event: error" && errored.IsZero():
			errored = time.Now()
		}
	}, "X-Claude-Code-Session-Id", "paused")
	a.signal(procgroup.Thaw)
	bound := hostExpiry + pingInterval + 2*time.Second
	took := errored.Sub(stopped)
	ok := !errored.IsZero() && pings >= 2 && took <= bound+2*time.Second && strings.Contains(strings.Join(lines, "\n"), "stopped in the middle")
	if !ok {
		t.Errorf("%d pings, error %v after the stop; the stream's end:\n%s", pings, took, tail(lines, 6))
	}
	f.add(t, "%d pings, then the error %v after SIGSTOP (expiry %v + ping %v + 2 s = %v): %v",
		pings, took.Round(100*time.Millisecond), hostExpiry, pingInterval, bound, ok)
}

// duplicateOnAnotherHost: the same named request sent to b while a runs
// it for ten seconds waits for a's answer and gets it, replayed; the
// upstream sees it once.
func duplicateOnAnotherHost(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	a.ensure()
	body := messagesBody(false, "a question worth ten seconds")
	first := make(chan string, 1)
	began := time.Now()
	go func() {
		resp, got, err := post(a.url(), "/v1/messages", body, "Idempotency-Key", "matrix-dup")
		first <- fmt.Sprint(err, resp != nil && resp.StatusCode == http.StatusOK, got)
	}()
	c.waitUpstream(t, "worth ten seconds")
	resp, got, err := post(b.url(), "/v1/messages", body, "Idempotency-Key", "matrix-dup")
	waited := time.Since(began)
	<-first
	ok := err == nil && resp.StatusCode == http.StatusOK && resp.Header.Get("X-Meridian-Replayed") == "true" &&
		strings.Contains(got, "the considered answer") && c.upstreamHad("worth ten seconds") == 1
	if !ok {
		t.Errorf("the duplicate: %v %v %s", err, resp, got)
	}
	f.add(t, "the duplicate got the first answer replayed after %v, upstream saw it %d time(s): %v",
		waited.Round(100*time.Millisecond), c.upstreamHad("worth ten seconds"), ok)
}

// holderDiesUnderANamedRequest: a named turn relayed through b to a,
// which is killed before it answers: b says the outcome is unknown, not
// that an identical request runs.
func holderDiesUnderANamedRequest(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	a.ensure()
	if resp, body, err := post(a.url(), "/v1/messages", messagesBody(false, "hello"), "X-Claude-Code-Session-Id", "orphan"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 through a: %v %s", err, body)
	}
	turn2 := messagesBody(false, "hello", "answer to hello", "hang on a moment")
	answered := make(chan string, 1)
	go func() {
		resp, body, err := post(b.url(), "/v1/messages", turn2, "X-Claude-Code-Session-Id", "orphan", "Idempotency-Key", "matrix-orphan")
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- fmt.Sprint(resp.StatusCode, " ", body)
	}()
	c.waitUpstream(t, "hang on")
	a.kill9()
	killed := time.Now()
	got := <-answered
	took := time.Since(killed)
	_, retry, _ := post(b.url(), "/v1/messages", turn2, "X-Claude-Code-Session-Id", "orphan", "Idempotency-Key", "matrix-orphan")
	ok := strings.HasPrefix(got, "409 ") && strings.Contains(got, "outcome is unknown") && !strings.Contains(got, "is running") &&
		strings.Contains(retry, "outcome is unknown")
	if !ok {
		t.Errorf("answer %s; its retry %s", got, retry)
	}
	f.add(t, "answered %v after SIGKILL: %.60s…; retry alike: %v", took.Round(10*time.Millisecond), got, ok)
}

// storeOutage: PostgreSQL stopped; every host reads not ready within a
// short grace while /health stays up, a model request gets 503 with a
// wait, and all are ready again soon after the store is back.
func storeOutage(t *testing.T, c *cluster, f *figures) {
	for _, h := range c.hosts {
		h.ensure()
	}
	if err := c.pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	down := waitAll(c, http.StatusServiceUnavailable, 30*time.Second)
	notReady := time.Since(stopped)
	resp, body, err := post(c.hosts[1].url(), "/v1/messages", messagesBody(false, "during the outage"))
	modelOK := err == nil && resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" &&
		strings.Contains(body, `"type":"error"`)
	health, _ := http.Get(c.hosts[2].url() + "/health")
	if health != nil {
		health.Body.Close()
	}
	if err := c.pg.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	up := waitAll(c, http.StatusOK, 60*time.Second)
	ready := time.Since(started)
	ok := down && up && modelOK && health != nil && health.StatusCode == http.StatusOK
	if !ok {
		t.Errorf("all not ready %v, model answer %v %v %.200s, health %v, ready again %v", down, err, resp, body, health, up)
	}
	f.add(t, "all 3 not ready %v after the stop, a model request 503 with Retry-After, /health 200; ready %v after the start: %v",
		notReady.Round(100*time.Millisecond), ready.Round(100*time.Millisecond), ok)
}

// waitAll waits until every host's /ready answers status.
func waitAll(c *cluster, status int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		n := 0
		for _, h := range c.hosts {
			if resp, err := http.Get(h.url() + "/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == status {
					n++
				}
			}
		}
		if n == len(c.hosts) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// backgroundOnTheHolder: a background Response continuing a conversation
// held by a, sent to b, runs on a's live process.
func backgroundOnTheHolder(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	a.ensure()
	if resp, body, err := post(a.url(), "/v1/responses", responsesBody(false, false, "first"), "X-Claude-Code-Session-Id", "bg"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 through a: %v %s", err, body)
	}
	resp, body, err := post(b.url(), "/v1/responses", responsesBody(false, true, "first", "answer to first", "second"), "X-Claude-Code-Session-Id", "bg")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the background turn through b: %v %s", err, body)
	}
	id := jsonField(body, "id")
	var status, final string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, b.url()+"/v1/responses/"+id, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		final = readAll(r)
		if status = jsonField(final, "status"); status == "completed" || status == "failed" {
			break
		}
	}
	cold := false
	reqs := c.up.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(last.AllText(), "<conversation_history>") {
		cold = true
	}
	ok := resp.Header.Get("X-Meridian-Host") == a.id && status == "completed" && strings.Contains(final, "answer to second") && !cold
	if !ok {
		t.Errorf("taken by %q (holder %q), %s, cold %v", resp.Header.Get("X-Meridian-Host"), a.id, final, cold)
	}
	f.add(t, "taken by the holder, %s on its live process: %v", status, ok)
}

// retryAfterTheLastByte: the moment a streamed named answer's last event
// is read from a, the same request reaches b: it must be the replay, not
// 409 (the answer is saved before its last bytes are written).
func retryAfterTheLastByte(t *testing.T, c *cluster, f *figures) {
	a, b := c.hosts[0], c.hosts[1]
	a.ensure()
	body := messagesBody(true, "answer and then be asked again")
	var resp *http.Response
	var got string
	var err error
	_, _, _ = stream(a.url(), "/v1/messages", body, func(line string) {
		if strings.Contains(line, "message_stop") && resp == nil {
			resp, got, err = post(b.url(), "/v1/messages", body, "Idempotency-Key", "matrix-last-byte")
		}
	}, "Idempotency-Key", "matrix-last-byte")
	ok := err == nil && resp != nil && resp.StatusCode == http.StatusOK && resp.Header.Get("X-Meridian-Replayed") == "true"
	if !ok {
		t.Errorf("the retry at the last byte: %v %v %.300s", err, resp, got)
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	f.add(t, "the retry sent as the last event was read: %d, replayed %v", status, ok)
}

// drainKeepsHealth: a host draining (SIGTERM) with a stream running
// reads 503 on /ready and 200 on /health, and finishes the stream.
func drainKeepsHealth(t *testing.T, c *cluster, f *figures) {
	h := c.hosts[2]
	h.ensure()
	var ready, health int
	var drained time.Time
	status, lines, err := stream(h.url(), "/v1/messages", messagesBody(true, "count slowly"), func(line string) {
		if strings.Contains(line, `"text":"two `) && drained.IsZero() {
			h.signal(syscall.SIGTERM)
			drained = time.Now()
			time.Sleep(200 * time.Millisecond)
			ready, health = getStatus(h.url()+"/ready"), getStatus(h.url()+"/health")
		}
	})
	all := strings.Join(lines, "\n")
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		t.Error("the draining host did not exit")
	}
	ok := status == http.StatusOK && err == nil && strings.Contains(all, "message_stop") && strings.Contains(all, "eight") &&
		ready == http.StatusServiceUnavailable && health == http.StatusOK
	if !ok {
		t.Errorf("stream %d %v, ready %d, health %d:\n%s", status, err, ready, health, tail(lines, 4))
	}
	f.add(t, "while draining /ready %d, /health %d, the running stream finished, exit %v after SIGTERM: %v",
		ready, health, time.Since(drained).Round(100*time.Millisecond), ok)
	h.start()
}

func getStatus(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func tail(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
