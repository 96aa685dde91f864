package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// routedHosts starts three hosts on one store with one cluster key, each
// with args besides.
func routedHosts(t *testing.T, up *testkit.Upstream, args ...string) (dsn string, hosts []*gatewayProc) {
	t.Helper()
	dsn = testkit.PostgresServer(t).NewDatabase(t)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
		g := newHost(t, up)
		g.startOn(ip, dsn, append([]string{"--cluster-key", "test-cluster-key"}, args...)...)
		hosts = append(hosts, g)
	}
	return dsn, hosts
}

func hostID(t *testing.T, g *gatewayProc) string {
	t.Helper()
	var ready struct{ Host string }
	g.getJSON("/ready", &ready)
	return ready.Host
}

// A conversation whose turns arrive at three hosts in turn runs every
// turn on the one claude process that ran its first: the other hosts
// forward its turns there, and the host that answered says so. Only the
// new user message is written to that process each turn.
func TestTurnsReachTheHostThatHoldsTheConversation(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "answer to " + r.LastUserText()} })
	_, hosts := routedHosts(t, up)
	holder := hostID(t, hosts[0])

	var history []map[string]string
	var pid int
	var bytes []int
	for turn := 1; turn <= 6; turn++ {
		g := hosts[(turn-1)%3]
		q := fmt.Sprintf("question %d", turn)
		history = append(history, map[string]string{"role": "user", "content": q})
		body, _ := json.Marshal(map[string]any{"model": "test-model", "max_tokens": 100, "messages": history})
		resp, answer, err := g.post(string(body), "X-Claude-Code-Session-Id", "routed")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(answer, "answer to "+q) {
			t.Fatalf("turn %d through %s: %v %v %s", turn, g.url, err, resp, answer)
		}
		if got := resp.Header.Get("X-Meridian-Host"); got != holder {
			t.Fatalf("turn %d through %s was answered by %q, not the holder %q", turn, g.url, got, holder)
		}
		history = append(history, map[string]string{"role": "assistant", "content": "answer to " + q})
		pids := hosts[0].claudes()
		if len(pids) != 1 || (pid != 0 && pids[0] != pid) {
			t.Fatalf("turn %d: the holder runs %v, want the one process %d", turn, pids, pid)
		}
		pid = pids[0]
		for _, other := range hosts[1:] {
			if n := len(other.claudes()); n != 0 {
				t.Fatalf("turn %d: a host that does not hold the conversation runs %d claude processes", turn, n)
			}
		}
		var info struct {
			LastInputBytes int `json:"last_input_bytes"`
		}
		hosts[0].getJSON("/v1/sessions/routed", &info)
		bytes = append(bytes, info.LastInputBytes)
	}
	// The live process is given the new message alone: what turn 6 wrote
	// is what turn 2 did, not the history.
	if bytes[5] > bytes[1]+8 || bytes[5] > 400 {
		t.Fatalf("bytes written to the CLI per turn: %v", bytes)
	}
	t.Logf("bytes written to the holder's CLI per turn: %v", bytes)
}

// A client tool's call answered through one host and its result sent
// through another complete on the paused process; a stream forwarded to
// the holder whose client goes away stops the holder's turn; a request
// that says it comes from another host without the cluster's key runs
// nothing.
func TestForwardedToolsStreamsAndKeys(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		all := r.AllText()
		switch last := r.LastUserText(); {
		case strings.Contains(all, "sunny in Oslo"):
			return testkit.Reply{Text: "It is sunny in Oslo."}
		case strings.Contains(all, "weather in Oslo"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_w1", Name: "mcp__c__get_weather", Input: map[string]any{"city": "Oslo"}}}}
		case strings.Contains(last, "long story"):
			return testkit.Reply{Chunks: []string{"once ", "upon "}, StallAfter: 4}
		}
		return testkit.Reply{Text: "answer to " + r.LastUserText()}
	})
	_, hosts := routedHosts(t, up)
	a, b := hosts[0], hosts[1]
	holder := hostID(t, a)
	tools := `"tools":[{"name":"get_weather","description":"the weather of a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`

	t.Run("a tool loop split across hosts", func(t *testing.T) {
		ask := `{"model":"test-model","max_tokens":100,` + tools + `,"messages":[{"role":"user","content":"what is the weather in Oslo?"}]}`
		resp, body, err := a.post(ask, "X-Claude-Code-Session-Id", "tools")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"stop_reason":"tool_use"`) {
			t.Fatalf("the tool call through a: %v %s", err, body)
		}
		pids := a.claudes()
		result := `{"model":"test-model","max_tokens":100,` + tools + `,"messages":[
			{"role":"user","content":"what is the weather in Oslo?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_w1","name":"get_weather","input":{"city":"Oslo"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_w1","content":"sunny in Oslo"}]}]}`
		resp, body, err = b.post(result, "X-Claude-Code-Session-Id", "tools")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "It is sunny in Oslo.") || resp.Header.Get("X-Meridian-Host") != holder {
			t.Fatalf("the tool result through b: %v %v %s", err, resp.Header, body)
		}
		if after := a.claudes(); len(pids) != 1 || len(after) != 1 || after[0] != pids[0] || len(b.claudes()) != 0 {
			t.Fatalf("the paused process %v did not finish the turn: a runs %v, b %v", pids, after, b.claudes())
		}
	})

	t.Run("a forwarded stream whose client leaves", func(t *testing.T) {
		first := prompt("hello there")
		if resp, body, err := a.post(first, "X-Claude-Code-Session-Id", "leaving"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("turn 1 on a: %v %s", err, body)
		}
		before := len(a.claudes())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		body := `{"model":"test-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello there"},
			{"role":"assistant","content":"answer to hello there"},{"role":"user","content":"tell a long story"}]}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Claude-Code-Session-Id", "leaving")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Meridian-Host"); got != holder {
			t.Fatalf("the stream through b is answered by %q, not the holder", got)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), "upon") {
		}
		cancel()
		resp.Body.Close()
		left := time.Now()
		if err := testkit.WaitFor(3*time.Second, func() error {
			if n := len(a.claudes()); n >= before {
				return fmt.Errorf("a still runs %d claude processes", n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("the holder's claude was gone %v after the client left b", time.Since(left).Round(time.Millisecond))
	})

	t.Run("a forward without the cluster's key", func(t *testing.T) {
		calls := len(up.Requests())
		for _, tc := range []struct {
			header []string
			status int
		}{
			{[]string{"X-Meridian-Forwarded-By", "intruder"}, http.StatusUnauthorized},
			{[]string{"X-Meridian-Forwarded-By", "intruder", "X-Meridian-Cluster-Key", "guessed"}, http.StatusForbidden},
			{[]string{"X-Meridian-Cluster-Key", "guessed", "X-Meridian-Client-Scope", "key:0000"}, http.StatusForbidden},
		} {
			resp, body, err := a.post(prompt("run this for me"), tc.header...)
			if err != nil || resp.StatusCode != tc.status || !strings.Contains(body, `"type":"error"`) {
				t.Fatalf("%v: %v %v %s", tc.header, err, resp, body)
			}
		}
		if n := len(up.Requests()); n != calls {
			t.Fatalf("a refused forward reached the upstream (%d requests, %d before)", n, calls)
		}
	})
}

// A new conversation that reaches a host whose every process slot is
// taken is answered by another host with a free one, rather than queued.
func TestNewConversationsGoWhereSlotsAreFree(t *testing.T) {
	t.Parallel()
	up, gate := gatedUpstream(t)
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	a, b := newHost(t, up), newHost(t, up)
	a.startOn("127.0.0.2", dsn, "--cluster-key", "test-cluster-key", "--max-concurrent", "1")
	b.startOn("127.0.0.3", dsn, "--cluster-key", "test-cluster-key")
	other := hostID(t, b)
	slow := a.postAsync(prompt("slow"), "X-Claude-Code-Session-Id", "busy")
	waitRequests(t, up, 1)
	resp, body, err := a.post(prompt("hello"), "X-Claude-Code-Session-Id", "fresh")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, "answer to hello") {
		t.Fatalf("a new conversation on a host with no free slot: %v %v %s", err, resp, body)
	}
	if got := resp.Header.Get("X-Meridian-Host"); got != other {
		t.Fatalf("the new conversation was answered by %q, not the host with free slots %q", got, other)
	}
	close(gate)
	if got := <-slow; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the turn that held the slot: %s", got)
	}
}

// A background response continuing a conversation that another host
// holds runs on that host's live process, like a foreground turn: it
// does not start cold elsewhere from the shared transcript. It is
// followed to its end through the host it was sent to.
func TestABackgroundResponseRunsOnTheHolder(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "answer to " + r.LastUserText()} })
	_, hosts := routedHosts(t, up)
	a, b := hosts[0], hosts[1]
	ctx := context.Background()
	session := oaioption.WithHeader("X-Claude-Code-Session-Id", "background-held")
	input := func(items ...string) responses.ResponseNewParamsInputUnion {
		var list responses.ResponseInputParam
		for i, text := range items {
			role := responses.EasyInputMessageRoleUser
			if i%2 == 1 {
				role = responses.EasyInputMessageRoleAssistant
			}
			list = append(list, responses.ResponseInputItemParamOfMessage(text, role))
		}
		return responses.ResponseNewParamsInputUnion{OfInputItemList: list}
	}
	if _, err := a.openai().Responses.New(ctx, responses.ResponseNewParams{Model: "test-model", Input: input("first")}, session); err != nil {
		t.Fatalf("turn 1 through a: %v", err)
	}
	pids := a.claudes()
	var resp *http.Response
	r2, err := b.openai().Responses.New(ctx, responses.ResponseNewParams{Model: "test-model", Background: openai.Bool(true),
		Input: input("first", "answer to first", "second")}, session, oaioption.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("the background turn through b: %v", err)
	}
	if got := resp.Header.Get("X-Meridian-Host"); got != hostID(t, a) {
		t.Fatalf("the background turn was taken by %q, not the holder", got)
	}
	var done *responses.Response
	if err := testkit.WaitFor(20*time.Second, func() error {
		got, err := b.openai().Responses.Get(ctx, r2.ID, responses.ResponseGetParams{})
		if err != nil {
			return err
		}
		if got.Status != "completed" {
			return fmt.Errorf("status %s", got.Status)
		}
		done = got
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.OutputText(), "answer to second") {
		t.Fatalf("the background turn answered %q", done.OutputText())
	}
	if now := a.claudes(); len(pids) != 1 || len(now) != 1 || now[0] != pids[0] || len(b.claudes()) != 0 {
		t.Fatalf("the holder ran %v then %v; b runs %v", pids, now, b.claudes())
	}
	reqs := up.Requests()
	if last := reqs[len(reqs)-1]; strings.Contains(last.AllText(), "<conversation_history>") {
		t.Fatalf("the background turn did not continue the live process: %s", last.PrettyBody())
	}
}
