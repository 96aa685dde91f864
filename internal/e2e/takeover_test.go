package e2e

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/meridian-gw/meridian/internal/procgroup"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// turnBody is the Messages body of turn n of a conversation whose
// questions are "<prefix> n" and answers "answer to <prefix> n".
func turnBody(prefix string, n int) string {
	var history []map[string]string
	for i := 1; i <= n; i++ {
		history = append(history, map[string]string{"role": "user", "content": fmt.Sprintf("%s %d", prefix, i)})
		if i < n {
			history = append(history, map[string]string{"role": "assistant", "content": fmt.Sprintf("answer to %s %d", prefix, i)})
		}
	}
	body, _ := json.Marshal(map[string]any{"model": "test-model", "max_tokens": 100, "messages": history})
	return string(body)
}

// withoutCacheControl is a message without its cache breakpoints.
func withoutCacheControl(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != "cache_control" {
				out[k] = withoutCacheControl(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutCacheControl(e)
		}
		return out
	}
	return v
}

// waitVerdict waits until g's latest telemetry record has verdict.
func waitVerdict(t *testing.T, g *gatewayProc, verdict string) {
	t.Helper()
	if err := testkit.WaitFor(5*time.Second, func() error {
		var page struct {
			Requests []struct {
				Verdict string `json:"verdict"`
			} `json:"requests"`
		}
		g.getJSON("/telemetry/requests?limit=1", &page)
		if len(page.Requests) == 0 || page.Requests[0].Verdict != verdict {
			return fmt.Errorf("the latest record: %+v", page.Requests)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// waitShared waits until the store holds conversation key's transcript
// as far as the answer want: each turn's copy lands in the background,
// and an earlier turn's copy must not pass for the last one's.
func waitShared(t *testing.T, db *sql.DB, key, want string) {
	t.Helper()
	if err := testkit.WaitFor(10*time.Second, func() error {
		var data []byte
		err := db.QueryRow(`SELECT transcript FROM conversations WHERE key = $1 AND transcript_session = cli_session_id AND transcript IS NOT NULL`, key).Scan(&data)
		if err != nil {
			return fmt.Errorf("the transcript of %s is not shared yet: %w", key, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return err
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		if !bytes.Contains(raw, []byte(want)) {
			return fmt.Errorf("the shared transcript of %s does not hold %q yet", key, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// When the host that holds a conversation is killed, its next turn,
// through another host, continues from the transcript the dead host's CLI
// wrote: the upstream gets the same structured history the holder's CLI
// would have sent (its prompt-cache prefix unchanged), not a replay. With
// that transcript gone from the store the turn replays, is answered, and
// its telemetry says it was replayed.
func TestTakeoverFromTheSharedTranscript(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		last := r.LastUserText()
		return testkit.Reply{Text: "answer to " + last[strings.LastIndex(last, "\n")+1:]}
	})
	dsn, hosts := routedHosts(t, up)
	a, b, c := hosts[0], hosts[1], hosts[2]
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	t.Run("from the transcript", func(t *testing.T) {
		for n := 1; n <= 3; n++ {
			if resp, body, err := a.post(turnBody("question", n), "X-Claude-Code-Session-Id", "takeover"); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("turn %d on a: %v %s", n, err, body)
			}
		}
		waitShared(t, db, "takeover", "answer to question 3")
		reqs := up.Requests()
		held := reqs[len(reqs)-1].Messages() // what a's CLI sent for turn 3
		a.kill9()
		killed := time.Now()
		resp, body, err := b.post(turnBody("question", 4), "X-Claude-Code-Session-Id", "takeover")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to question 4") {
			t.Fatalf("turn 4 through b after a was killed: %v %v %s", err, resp, body)
		}
		t.Logf("turn 4 answered by %s %v after the holder was killed", resp.Header.Get("X-Meridian-Host"), time.Since(killed).Round(time.Millisecond))
		reqs = up.Requests()
		next := reqs[len(reqs)-1]
		if strings.Contains(next.AllText(), "<conversation_history>") {
			t.Fatalf("turn 4 was replayed, not resumed: %s", next.PrettyBody())
		}
		got := next.Messages()
		if len(got) < len(held)+2 {
			t.Fatalf("turn 4 sent %d messages, turn 3 %d", len(got), len(held))
		}
		for i := range held {
			// The CLI moves its cache breakpoint to the newest message:
			// the prefix is the messages' content.
			x, _ := json.Marshal(withoutCacheControl(held[i]))
			y, _ := json.Marshal(withoutCacheControl(got[i]))
			if string(x) != string(y) {
				t.Fatalf("message %d differs from what the holder sent (the cache prefix changed):\n%s\n%s", i, x, y)
			}
		}
	})

	t.Run("without it", func(t *testing.T) {
		for n := 1; n <= 2; n++ {
			if resp, body, err := c.post(turnBody("query", n), "X-Claude-Code-Session-Id", "lost"); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("turn %d on c: %v %s", n, err, body)
			}
		}
		waitShared(t, db, "lost", "answer to query 2")
		// Killed first: a live holder could share its transcript again.
		c.kill9()
		if _, err := db.Exec(`UPDATE conversations SET transcript = NULL, transcript_session = '' WHERE key = 'lost'`); err != nil {
			t.Fatal(err)
		}
		resp, body, err := b.post(turnBody("query", 3), "X-Claude-Code-Session-Id", "lost")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to query 3") {
			t.Fatalf("turn 3 through b: %v %v %s", err, resp, body)
		}
		reqs := up.Requests()
		if all := reqs[len(reqs)-1].AllText(); !strings.Contains(all, "<conversation_history>") || !strings.Contains(all, "answer to query 2") {
			t.Fatalf("turn 3 was not replayed with its history: %s", all)
		}
		waitVerdict(t, b, "replayed")
	})
}

// A holder that drains (SIGTERM) finishes its running stream, turns load
// balancers away (/ready), and hands its conversations over: the next
// turn, through another host, continues there from the transcript,
// without a replay.
func TestDrainHandsConversationsOver(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	gate := make(chan struct{})
	up.Respond(func(r testkit.Request) testkit.Reply {
		last := r.LastUserText()
		q := last[strings.LastIndex(last, "\n")+1:]
		if q == "question 3" {
			return testkit.Reply{Chunks: []string{"answer to ", "question 3"}, Gate: gate}
		}
		return testkit.Reply{Text: "answer to " + q}
	})
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	a, b := newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn, "--cluster-key", "test-cluster-key")
	b.startOn("127.0.0.3", dsn, "--cluster-key", "test-cluster-key")
	for n := 1; n <= 2; n++ {
		if resp, body, err := a.post(turnBody("question", n), "X-Claude-Code-Session-Id", "handed"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("turn %d on a: %v %s", n, err, body)
		}
	}
	streamed := a.postAsync(strings.Replace(turnBody("question", 3), `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1),
		"X-Claude-Code-Session-Id", "handed")
	waitRequests(t, up, 3)
	a.drain(t)
	close(gate)
	if got := <-streamed; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "message_stop") || !strings.Contains(got, "question 3") {
		t.Fatalf("the stream running when the holder began to drain: %s", got)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("a after its drain: %v", err)
	}
	resp, body, err := b.post(turnBody("question", 4), "X-Claude-Code-Session-Id", "handed")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to question 4") {
		t.Fatalf("turn 4 through b: %v %v %s", err, resp, body)
	}
	reqs := up.Requests()
	next := reqs[len(reqs)-1]
	if strings.Contains(next.AllText(), "<conversation_history>") || len(next.Messages()) < 7 {
		t.Fatalf("turn 4 on b was not resumed from a's transcript: %s", next.PrettyBody())
	}
}

// A holder that stops without dying (a paused VM: SIGSTOP) still accepts
// connections and never answers; the host relaying its next turn watches
// its heartbeat and, once it has expired, answers the turn itself from
// the shared transcript.
func TestStoppedHolderIsPassedOver(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		last := r.LastUserText()
		return testkit.Reply{Text: "answer to " + last[strings.LastIndex(last, "\n")+1:]}
	})
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a, b := newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn, "--cluster-key", "test-cluster-key")
	b.startOn("127.0.0.3", dsn, "--cluster-key", "test-cluster-key")
	if resp, body, err := a.post(turnBody("question", 1), "X-Claude-Code-Session-Id", "paused"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("turn 1 on a: %v %s", err, body)
	}
	waitShared(t, db, "paused", "answer to question 1")
	if err := procgroup.Signal(a.cmd.Process.Pid, procgroup.Freeze); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = procgroup.Signal(a.cmd.Process.Pid, procgroup.Thaw) })
	stopped := time.Now()
	resp, body, err := b.post(turnBody("question", 2), "X-Claude-Code-Session-Id", "paused")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to question 2") {
		t.Fatalf("turn 2 through b while a is stopped: %v %v %s", err, resp, body)
	}
	if got, want := resp.Header.Get("X-Meridian-Host"), hostID(t, b); got != want {
		t.Fatalf("turn 2 was answered by %q, not %q", got, want)
	}
	// Not held: without the watch the relay would wait on the stopped
	// holder for as long as the client does. The bound leaves room for
	// the expiry (3 s), the watch's look (1 s) and a new claude resuming
	// the transcript on a loaded machine; the time itself is logged.
	took := time.Since(stopped)
	if took > 20*time.Second {
		t.Fatalf("turn 2 took %v: the stopped holder held it", took)
	}
	t.Logf("turn 2 answered by the other host %v after the holder stopped (heartbeats expire after 3 s)", took.Round(100*time.Millisecond))
	reqs := up.Requests()
	if strings.Contains(reqs[len(reqs)-1].AllText(), "<conversation_history>") {
		t.Fatal("turn 2 was replayed, not resumed from the shared transcript")
	}
}

// A holder killed while its turn waits on a client tool: the paused turn
// lived only in its process (the CLI holds the call inside a turn, at no
// place a resume can stand), so the tool's result, sent through another
// host, is answered there from the whole history, the call and its
// result included, and its telemetry says it was replayed.
func TestPausedToolTurnOutlivesItsHolder(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		all := r.AllText()
		switch {
		case strings.Contains(all, "sunny in Oslo"):
			return testkit.Reply{Text: "It is sunny in Oslo."}
		case strings.Contains(all, "weather in Oslo"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_w1", Name: "mcp__c__get_weather", Input: map[string]any{"city": "Oslo"}}}}
		}
		return testkit.Reply{Text: "answer to " + r.LastUserText()}
	})
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	a, b := newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn, "--cluster-key", "test-cluster-key")
	b.startOn("127.0.0.3", dsn, "--cluster-key", "test-cluster-key")
	tools := `"tools":[{"name":"get_weather","description":"the weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	ask := `{"model":"test-model","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"what is the weather in Oslo?"}]}`
	resp, body, err := a.post(ask, "X-Claude-Code-Session-Id", "orphaned-call")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"stop_reason":"tool_use"`) {
		t.Fatalf("the tool call through a: %v %s", err, body)
	}
	a.kill9()
	killed := time.Now()
	result := `{"model":"test-model","max_tokens":100,` + tools + `,"messages":[
		{"role":"user","content":"what is the weather in Oslo?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_w1","name":"get_weather","input":{"city":"Oslo"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_w1","content":"sunny in Oslo"}]}]}`
	resp, body, err = b.post(result, "X-Claude-Code-Session-Id", "orphaned-call")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "It is sunny in Oslo.") {
		t.Fatalf("the tool result through b after a was killed: %v %v %s", err, resp, body)
	}
	if got, want := resp.Header.Get("X-Meridian-Host"), hostID(t, b); got != want {
		t.Fatalf("the result was answered by %q, not %q", got, want)
	}
	t.Logf("the tool result answered by the other host %v after the holder was killed", time.Since(killed).Round(time.Millisecond))
	reqs := up.Requests()
	if all := reqs[len(reqs)-1].AllText(); !strings.Contains(all, "<conversation_history>") || !strings.Contains(all, "toolu_w1") || !strings.Contains(all, "sunny in Oslo") {
		t.Fatalf("the upstream did not get the call and its result in the history: %s", all)
	}
	waitVerdict(t, b, "replayed")
}
