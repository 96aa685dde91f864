package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// answerLastQuestion makes the upstream answer each request with a text
// naming the last user message, so every turn's answer differs.
func answerLastQuestion(up *testkit.Upstream) {
	up.Respond(func(r testkit.Request) testkit.Reply {
		q := r.LastUserText()
		if i := strings.LastIndex(q, "\n"); i >= 0 {
			q = q[i+1:]
		}
		return testkit.Reply{Text: "answer to " + q, Usage: testkit.Usage{InputTokens: 10, OutputTokens: 3}}
	})
}

// conversation drives a client-side conversation the way coding clients
// do: the whole history goes out with every request.
type conversation struct {
	t       *testing.T
	s       *stack
	client  *sdk.Client
	history []sdk.MessageParam
	session string // X-Meridian-Session-Id of the last answer
}

func newConversation(t *testing.T, s *stack, headers ...string) *conversation {
	var opts []option.RequestOption
	for i := 0; i+1 < len(headers); i += 2 {
		opts = append(opts, option.WithHeader(headers[i], headers[i+1]))
	}
	return &conversation{t: t, s: s, client: s.client(opts...)}
}

// ask sends the history plus a new question and appends the answer.
func (c *conversation) ask(q string) *sdk.Message {
	c.t.Helper()
	c.history = append(c.history, userMessage(q))
	var resp *http.Response
	msg, err := c.client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "test-model", MaxTokens: 100, Messages: c.history,
	}, option.WithResponseInto(&resp))
	if err != nil {
		c.t.Fatalf("ask %q: %v", q, err)
	}
	if want := "answer to " + q; len(msg.Content) != 1 || msg.Content[0].Text != want {
		c.t.Fatalf("ask %q: answer %+v, want %q", q, msg.Content, want)
	}
	c.session = resp.Header.Get("X-Meridian-Session-Id")
	if c.session == "" {
		c.t.Fatal("no X-Meridian-Session-Id on the answer")
	}
	c.history = append(c.history, msg.ToParam())
	return msg
}

// sessionInfo reads GET /v1/sessions/{key}.
func sessionInfo(t *testing.T, s *stack, key string) map[string]any {
	t.Helper()
	var info map[string]any
	resp := getJSON(t, s.URL+"/v1/sessions/"+url.PathEscape(key), nil, &info)
	if resp.StatusCode != 200 {
		t.Fatalf("session %q: %d %v", key, resp.StatusCode, info)
	}
	return info
}

// verdicts renders the verdict counts as continuation/compaction/undo/diverged.
func verdicts(info map[string]any) string {
	v, _ := info["verdicts"].(map[string]any)
	return fmt.Sprintf("%v/%v/%v/%v", v["continuation"], v["compaction"], v["undo"], v["diverged"])
}

// Turns 2–5 run on the process turn 1 started; the CLI receives only each
// new question while the upstream sees the whole conversation.
func TestTurnsContinueOnTheLiveProcess(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "five-turns")

	var pids []int
	var sessions []string
	for turn := 1; turn <= 5; turn++ {
		c.ask(fmt.Sprintf("question %d", turn))
		live := testkit.Processes(s.Marker)
		if len(live) != 1 {
			t.Fatalf("after turn %d: %d claude processes, want the one live process", turn, len(live))
		}
		pids = append(pids, live[0])
		sessions = append(sessions, c.session)
	}
	for turn := 2; turn <= 5; turn++ {
		if pids[turn-1] != pids[0] || sessions[turn-1] != sessions[0] {
			t.Fatalf("turn %d ran on pid %d session %s, turn 1 on pid %d session %s", turn, pids[turn-1], sessions[turn-1], pids[0], sessions[0])
		}
	}
	// What the CLI was given, turn by turn: only the new question.
	got := testkit.TranscriptUserTexts(t, s.env, sessions[0])
	want := []string{"question 1", "question 2", "question 3", "question 4", "question 5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the CLI was given %q, want %q", got, want)
	}
	// What the upstream saw: the whole conversation every time.
	reqs := s.Upstream.Requests()
	if len(reqs) != 5 {
		t.Fatalf("upstream saw %d requests", len(reqs))
	}
	all := reqs[4].AllText()
	for turn := 1; turn <= 5; turn++ {
		if !strings.Contains(all, fmt.Sprintf("question %d", turn)) || (turn < 5 && !strings.Contains(all, fmt.Sprintf("answer to question %d", turn))) {
			t.Fatalf("turn 5's upstream request lacks turn %d:\n%s", turn, all)
		}
	}
	info := sessionInfo(t, s, "five-turns")
	if info["live"] != true || info["claude_session_id"] != sessions[0] || info["messages"] != float64(10) ||
		verdicts(info) != "4/0/0/1" {
		t.Fatalf("session info %v", info)
	}
}
