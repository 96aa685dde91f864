package httpapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// upstreamTurns renders what the upstream saw in its last request as the
// conversation's non-system messages, "role:text" each.
func upstreamTurns(s *stack) []string {
	reqs := s.Upstream.Requests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages() {
		mm, _ := m.(map[string]any)
		if mm["role"] == "system" {
			continue
		}
		b, _ := json.Marshal(mm["content"])
		var text string
		var blocks []map[string]any
		if json.Unmarshal(b, &text) != nil && json.Unmarshal(b, &blocks) == nil {
			for _, bl := range blocks {
				if s, ok := bl["text"].(string); ok {
					text += s
				}
			}
		}
		out = append(out, fmt.Sprintf("%s:%s", mm["role"], text))
	}
	return out
}

// The client drops the last exchange and asks something else: the session
// forks before it, and the upstream no longer sees the dropped exchange.
func TestUndoForksBeforeTheDroppedExchange(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "undo")
	c.ask("q1")
	c.ask("q2")
	first := c.session
	c.history = c.history[:2] // drop q2 and its answer
	c.ask("q2 instead")
	if c.session == first {
		t.Fatal("an undo must fork into a new session")
	}
	got := strings.Join(upstreamTurns(s), " | ")
	if want := "user:q1 | assistant:answer to q1 | user:q2 instead"; got != want {
		t.Fatalf("upstream saw %q, want %q", got, want)
	}
	// The forked session was given only the new question.
	if texts := testkit.TranscriptUserTexts(t, s.env, c.session); texts[len(texts)-1] != "q2 instead" {
		t.Fatalf("the fork was given %q", texts)
	}
	c.ask("q3") // and continues live from there
	if info := sessionInfo(t, s, "undo"); verdicts(info) != "2/0/1/1" || info["claude_session_id"] != c.session {
		t.Fatalf("session info %v", info)
	}
}

// The client replaces the beginning with a summary but keeps the last
// exchange: the session continues after it, on the live process.
func TestCompactionContinuesAfterTheKeptEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "compact")
	for i := 1; i <= 3; i++ {
		c.ask(fmt.Sprintf("q%d", i))
	}
	session, pid := c.session, testkit.Processes(s.Marker)
	kept := c.history[4:] // q3 and its answer
	c.history = append([]sdk.MessageParam{userMessage("Summary: we discussed q1 and q2.")}, kept...)
	c.ask("q4")
	if c.session != session || fmt.Sprint(testkit.Processes(s.Marker)) != fmt.Sprint(pid) {
		t.Fatal("a compaction left the live process")
	}
	if texts := testkit.TranscriptUserTexts(t, s.env, session); texts[len(texts)-1] != "q4" {
		t.Fatalf("the CLI was given %q", texts)
	}
	if info := sessionInfo(t, s, "compact"); verdicts(info) != "2/1/0/1" {
		t.Fatalf("session info %v", info)
	}
}

// A history with nothing in common with the session's starts fresh and
// replays everything.
func TestDivergedHistoryIsReplayedInFull(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "diverge")
	c.ask("q1")
	c.ask("q2")
	old := c.session
	c.history = []sdk.MessageParam{
		userMessage("another topic"),
		sdk.NewAssistantMessage(sdk.NewTextBlock("indeed another")),
	}
	c.ask("and then?")
	if c.session == old {
		t.Fatal("a diverged history must start a fresh session")
	}
	all := s.Upstream.Requests()[2].AllText()
	if !strings.Contains(all, "another topic") || !strings.Contains(all, "indeed another") || strings.Contains(all, "q1") {
		t.Fatalf("fresh session did not get exactly the new history:\n%s", all)
	}
	if info := sessionInfo(t, s, "diverge"); verdicts(info) != "1/0/0/2" {
		t.Fatalf("session info %v", info)
	}
}

// Meridian restarts between turns 2 and 3: turn 3 resumes the stored
// session from SQLite (--resume, forked at its last answer); the CLI is
// given only the new question, not a replay.
func TestRestartResumesFromTheStore(t *testing.T) {
	t.Parallel()
	a := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(a.Upstream)
	c := newConversation(t, a, "X-Claude-Code-Session-Id", "restart")
	c.ask("q1")
	c.ask("q2")
	before := c.session
	a.stop()
	if pids := testkit.Processes(a.Marker); len(pids) != 0 {
		t.Fatalf("live processes survived the shutdown: %v", pids)
	}

	b := newStack(t, stackOptions{sessions: true, share: a})
	c.s, c.client = b, b.client(option.WithHeader("X-Claude-Code-Session-Id", "restart"))
	c.ask("q3")
	if c.session == before {
		t.Fatal("a resumed session continues under a new (forked) id")
	}
	texts := testkit.TranscriptUserTexts(t, b.env, c.session)
	if len(texts) != 3 || texts[0] != "q1" || texts[1] != "q2" || texts[2] != "q3" {
		t.Fatalf("the resumed transcript holds %q: want the stored q1, q2 and only q3 new", texts)
	}
	if info := sessionInfo(t, b, "restart"); verdicts(info) != "2/0/0/1" {
		t.Fatalf("session info %v", info)
	}
	if got := strings.Join(upstreamTurns(b), " | "); !strings.HasPrefix(got, "user:q1 | assistant:answer to q1 | user:q2") {
		t.Fatalf("upstream saw %q", got)
	}
}

// Two meridian processes on one data dir: a conversation started on one
// continues on the other and back.
func TestTwoMeridiansShareConversations(t *testing.T) {
	t.Parallel()
	a := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(a.Upstream)
	b := newStack(t, stackOptions{sessions: true, share: a})
	c := newConversation(t, a, "X-Claude-Code-Session-Id", "shared")
	c.ask("q1 on a")
	c.ask("q2 on a")
	c.s, c.client = b, b.client(option.WithHeader("X-Claude-Code-Session-Id", "shared"))
	c.ask("q3 on b")
	c.s, c.client = a, a.client(option.WithHeader("X-Claude-Code-Session-Id", "shared"))
	c.ask("q4 on a")
	got := strings.Join(upstreamTurns(a), " | ")
	for _, q := range []string{"q1 on a", "q2 on a", "q3 on b", "q4 on a"} {
		if !strings.Contains(got, "user:"+q) {
			t.Fatalf("the last upstream request lacks %q: %s", q, got)
		}
	}
	if info := sessionInfo(t, a, "shared"); verdicts(info) != "3/0/0/1" || info["version"] != float64(4) {
		t.Fatalf("session info %v", info)
	}
}

// Two simultaneous turns of one conversation on two meridians: one runs;
// the other waits for it, or, past its wait, gets 409 with Retry-After.
func TestSimultaneousTurnsAreSerialised(t *testing.T) {
	t.Parallel()
	a := newStack(t, stackOptions{sessions: true, turnWait: 300 * time.Millisecond})
	b := newStack(t, stackOptions{sessions: true, share: a, turnWait: 20 * time.Second})
	answerLastQuestion(a.Upstream)
	c := newConversation(t, a, "X-Claude-Code-Session-Id", "busy")
	c.ask("q1")
	a.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		return testkit.Reply{Text: "slow answer", Delay: 1500 * time.Millisecond}
	})
	history := append(c.history, userMessage("q2"))
	params := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history}
	header := option.WithHeader("X-Claude-Code-Session-Id", "busy")

	type result struct {
		msg *sdk.Message
		err error
	}
	onB := make(chan result, 1)
	go func() {
		m, err := b.client(header).Messages.New(context.Background(), params)
		onB <- result{m, err}
	}()
	waitFor(t, func() bool { return len(a.Upstream.Requests()) == 2 }) // b's turn reached the upstream
	onA := make(chan result, 1)
	go func() {
		m, err := a.client(header).Messages.New(context.Background(), params)
		onA <- result{m, err}
	}()
	ra := <-onA
	ae := apiError(t, ra.err)
	if ae.StatusCode != http.StatusConflict || !strings.Contains(ae.RawJSON(), "busy") {
		t.Fatalf("second turn: %d %s, want 409 naming the conversation", ae.StatusCode, ae.RawJSON())
	}
	retryAfter(t, ae)
	if rb := <-onB; rb.err != nil || rb.msg.Content[0].Text != "slow answer" {
		t.Fatalf("first turn: %v", rb.err)
	}

	// With room to wait, the second turn runs after the first.
	var wg sync.WaitGroup
	results := make(chan error, 2)
	for _, st := range []*stack{a, b} {
		wg.Go(func() {
			_, err := st.client(header).Messages.New(context.Background(), sdk.MessageNewParams{
				Model: "test-model", MaxTokens: 100, Messages: append(history, sdk.NewAssistantMessage(sdk.NewTextBlock("slow answer")), userMessage("q3")),
			})
			results <- err
		})
	}
	wg.Wait()
	close(results)
	var ok, conflicts int
	for err := range results {
		if err == nil {
			ok++
		} else if apiError(t, err).StatusCode == http.StatusConflict {
			conflicts++
		}
	}
	// a waits 300 ms, b 20 s: b's turn always runs; a's runs or gets 409.
	if ok < 1 || ok+conflicts != 2 {
		t.Fatalf("%d answered, %d conflicts", ok, conflicts)
	}
}

// OpenCode's title agent shares the user's session header; it keeps a
// lineage and a lease of its own, so the chat continues on its process.
func TestOpenCodeTitleAgentHasItsOwnLineage(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	headers := []string{"User-Agent", "opencode/1.18.33", "X-Session-Id", "ses_abc", "X-Session-Affinity", "ses_abc"}
	chat := newConversation(t, s, headers...)
	chat.ask("fix the build")
	chatSession := chat.session

	title := newConversation(t, s, headers...)
	_, err := title.client.Messages.New(context.Background(), sdk.MessageNewParams{
		Model: "small-model", MaxTokens: 40,
		System:   []sdk.TextBlockParam{{Text: "You are a title generator. You output ONLY a thread title."}},
		Messages: []sdk.MessageParam{userMessage("fix the build")},
	})
	if err != nil {
		t.Fatal(err)
	}
	chat.ask("and run the tests")
	if chat.session != chatSession {
		t.Fatal("the title request broke the chat's lineage")
	}
	if v := verdicts(sessionInfo(t, s, "ses_abc")); v != "1/0/0/1" {
		t.Fatalf("chat verdicts %s", v)
	}
	if info := sessionInfo(t, s, "ses_abc#title"); info["client"] != "opencode" || verdicts(info) != "0/0/0/1" {
		t.Fatalf("title session %v", info)
	}
}

// With no live processes kept, every turn resumes the stored session and
// no claude process waits between turns.
func TestWithoutLiveProcessesEveryTurnResumes(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, noLive: true})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "no-live")
	seen := map[string]bool{}
	for i := 1; i <= 3; i++ {
		c.ask(fmt.Sprintf("q%d", i))
		if pids := testkit.Processes(s.Marker); len(pids) != 0 {
			t.Fatalf("after turn %d a claude process is still alive: %v", i, pids)
		}
		seen[c.session] = true
	}
	if len(seen) != 3 {
		t.Fatalf("expected a resumed (forked) session per turn, got %d sessions", len(seen))
	}
	if texts := testkit.TranscriptUserTexts(t, s.env, c.session); strings.Join(texts, "|") != "q1|q2|q3" {
		t.Fatalf("transcript %q", texts)
	}
	if v := verdicts(sessionInfo(t, s, "no-live")); v != "2/0/0/1" {
		t.Fatalf("verdicts %s", v)
	}
}

// A stored session whose transcript is gone from the CLI's disk cannot be
// resumed: the conversation is replayed into a fresh session instead.
func TestLostTranscriptFallsBackToReplay(t *testing.T) {
	t.Parallel()
	a := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(a.Upstream)
	c := newConversation(t, a, "X-Claude-Code-Session-Id", "lost")
	c.ask("q1")
	c.ask("q2")
	a.stop()
	var configDir string
	for _, kv := range a.env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			configDir = v
		}
	}
	if err := os.RemoveAll(filepath.Join(configDir, "projects")); err != nil {
		t.Fatal(err)
	}
	b := newStack(t, stackOptions{sessions: true, share: a})
	c.s, c.client = b, b.client(option.WithHeader("X-Claude-Code-Session-Id", "lost"))
	c.ask("q3")
	all := b.Upstream.Requests()[len(b.Upstream.Requests())-1].AllText()
	if !strings.Contains(all, "<conversation_history>") || !strings.Contains(all, "answer to q2") {
		t.Fatalf("the conversation was not replayed:\n%s", all)
	}
	if v := verdicts(sessionInfo(t, b, "lost")); v != "1/0/0/2" {
		t.Fatalf("verdicts %s", v)
	}
}

// Identical stateless requests — the same first message from a client
// that names no session — are new conversations, and new conversations
// wait for nobody: all three reach the upstream at once.
func TestNewConversationsRunSideBySide(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	gate := make(chan struct{})
	s.Upstream.Always(testkit.Reply{Text: "answer", Gate: gate})
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := s.client().Messages.New(context.Background(), simpleParams("the same question"))
			errs <- err
		}()
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 3 }) // serialised turns would stop at one
	close(gate)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A continuation of the one that kept the mapping still takes its
	// turn in order: it is served, on the conversation's session.
	c := newConversation(t, s)
	c.history = []sdk.MessageParam{userMessage("the same question"), sdk.NewAssistantMessage(sdk.NewTextBlock("answer"))}
	answerLastQuestion(s.Upstream)
	c.ask("and then?")
}

// A conversation's queue is bounded: past its waiters, a turn is refused
// at once with 429 and a wait, in the client's shape, while those within
// the bound are served in turn.
func TestCrowdedConversationIsRefused(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, maxWaiters: 2})
	gate := make(chan struct{})
	s.Upstream.Always(testkit.Reply{Text: "answer", Gate: gate})
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "crowded")
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.client.Messages.New(context.Background(), simpleParams("q1"))
			errs <- err
		}()
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 }) // one runs, two wait
	time.Sleep(300 * time.Millisecond)                                 // for the two to queue
	_, err := c.client.Messages.New(context.Background(), simpleParams("q1"))
	ae := apiError(t, err)
	if ae.StatusCode != http.StatusTooManyRequests || ae.Response.Header.Get("Retry-After") == "" ||
		!strings.Contains(ae.RawJSON(), "rate_limit_error") || !strings.Contains(ae.RawJSON(), "waiting") {
		t.Fatalf("a turn past the bound: %d %s", ae.StatusCode, ae.RawJSON())
	}
	close(gate)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A turn whose lease another holder takes over stops and publishes
// nothing: the client hears 409, and the conversation stays where it was.
func TestTurnWithALostLeaseStops(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, leaseTTL: 300 * time.Millisecond})
	answerLastQuestion(s.Upstream)
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "fenced")
	c.ask("q1")
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "late", Hang: true} })
	done := make(chan error, 1)
	go func() {
		_, err := c.client.Messages.New(context.Background(), sdk.MessageNewParams{
			Model: "test-model", MaxTokens: 100, Messages: append(c.history, userMessage("q2"))})
		done <- err
	}()
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 2 })
	db, err := sql.Open("sqlite", filepath.Join(s.DataDir, "meridian.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE turn_leases SET token = 'another-meridian' WHERE key = 'fenced'`); err != nil {
		t.Fatal(err)
	}
	ae := apiError(t, <-done)
	if ae.StatusCode != http.StatusConflict || !strings.Contains(ae.RawJSON(), "another turn took over") {
		t.Fatalf("turn with a lost lease: %d %s", ae.StatusCode, ae.RawJSON())
	}
	if info := sessionInfo(t, s, "fenced"); info["messages"] != float64(2) {
		t.Fatalf("the fenced turn published: %v", info)
	}
}

// OpenCode's user-prompt-submit-hook envelopes change every turn: lineage
// leaves them out, so a conversation whose earlier messages carry other
// envelopes than before still continues on its live process, and the new
// turn's envelope reaches the CLI with its question.
func TestOpenCodeHookEnvelopesAreNoEdit(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "answered"})
	envelope := func(ctx string) sdk.ContentBlockParamUnion {
		return sdk.NewTextBlock(`<user-prompt-submit-hook>{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"` + ctx + `"}}</user-prompt-submit-hook>`)
	}
	c := s.client(option.WithHeader("X-Opencode-Session", "ses_envelopes"), option.WithHeader("User-Agent", "opencode/1.0"))
	ask := func(msgs ...sdk.MessageParam) {
		t.Helper()
		if _, err := c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	ask(sdk.NewUserMessage(envelope("turn one: branch main"), sdk.NewTextBlock("q1")))
	first := testkit.Processes(s.Marker)
	ask(sdk.NewUserMessage(envelope("turn one, as resent"), sdk.NewTextBlock("q1")),
		sdk.NewAssistantMessage(sdk.NewTextBlock("answered")),
		sdk.NewUserMessage(envelope("turn two: 2 files changed"), sdk.NewTextBlock("q2")))
	if now := testkit.Processes(s.Marker); len(now) != 1 || now[0] != first[0] {
		t.Fatalf("the second turn left the live process: %v then %v", first, now)
	}
	if v := verdicts(sessionInfo(t, s, "ses_envelopes")); v != "1/0/0/1" {
		t.Fatalf("verdicts %s, want the second turn a continuation", v)
	}
	last := s.Upstream.Requests()[len(s.Upstream.Requests())-1]
	if body := string(last.RawBody); !strings.Contains(body, "turn two: 2 files changed") || strings.Count(body, "q1") != 1 {
		t.Fatalf("the CLI was not given the new envelope once:\n%s", last.PrettyBody())
	}
}
