package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// firstOutputs runs a stateless client's first turn of threeSteps (a
// call) and returns the history with that call's output, and the request
// that delivers it.
func firstOutputs(t *testing.T, c *openai.Client) ([]responses.ResponseInputItemUnionParam, responses.ResponseNewParams) {
	t.Helper()
	history := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("fix the build", responses.EasyInputMessageRoleUser)}
	p := itemsParams(history...)
	p.Tools, p.Store = responseTools(), openai.Bool(false)
	first, err := c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	history = append(history, echo(t, first)...)
	history = append(history, responses.ResponseInputItemParamOfFunctionCallOutput("package main"))
	history[len(history)-1].OfFunctionCallOutput.CallID = openai.String("toolu_1")
	p = itemsParams(history...)
	p.Tools, p.Store = responseTools(), openai.Bool(false)
	return history, p
}

// The OpenAI APIs replay too: a Responses request delivering function
// outputs, sent again, gets the same response (same id, same new call)
// and a chat request the same completion; neither reaches the upstream
// twice.
func TestOpenAIRetriesAreReplayed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(threeSteps)
	c := s.chatClient()
	_, p := firstOutputs(t, c)
	var r1, r2 *http.Response
	a, err := c.Responses.New(context.Background(), p, oaioption.WithResponseInto(&r1))
	if err != nil {
		t.Fatal(err)
	}
	calls := len(s.Upstream.Requests())
	b, err := c.Responses.New(context.Background(), p, oaioption.WithResponseInto(&r2))
	if err != nil {
		t.Fatal(err)
	}
	if replayed(r1) || !replayed(r2) || a.ID != b.ID || a.RawJSON() != b.RawJSON() || len(s.Upstream.Requests()) != calls {
		t.Fatalf("responses retry: replayed %v/%v, ids %s/%s, %d upstream calls (was %d)", replayed(r1), replayed(r2), a.ID, b.ID, len(s.Upstream.Requests()), calls)
	}

	s2 := newStack(t, stackOptions{sessions: true})
	s2.Upstream.Respond(threeSteps)
	l := &chatLoop{t: t, s: s2, client: s2.chatClient(), history: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("fix the build")}}
	l.send()
	l.history = append(l.history, openai.ToolMessage("package main", "toolu_1"))
	cp := chatParams(l.history...)
	cp.Tools = chatTools()
	var r3, r4 *http.Response
	x, err := l.client.Chat.Completions.New(context.Background(), cp, oaioption.WithResponseInto(&r3))
	if err != nil {
		t.Fatal(err)
	}
	calls = len(s2.Upstream.Requests())
	y, err := l.client.Chat.Completions.New(context.Background(), cp, oaioption.WithResponseInto(&r4))
	if err != nil {
		t.Fatal(err)
	}
	if replayed(r3) || !replayed(r4) || x.ID != y.ID || x.RawJSON() != y.RawJSON() || len(s2.Upstream.Requests()) != calls {
		t.Fatalf("chat retry: replayed %v/%v, ids %s/%s", replayed(r3), replayed(r4), x.ID, y.ID)
	}
}

// A background response that delivers a tool batch's outputs retires the
// saved answer that asked for them, as a foreground one does: the request
// that got the batch, sent again, is no longer answered from its save.
func TestBackgroundResultsRetireTheirSavedBatch(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(threeSteps)
	c := s.chatClient()
	history, batch := firstOutputs(t, c)
	second, err := c.Responses.New(context.Background(), batch) // saved: it delivered results, its answer is toolu_2
	if err != nil || len(calls(second)) != 1 {
		t.Fatalf("second: %v", err)
	}
	history = append(history, echo(t, second)...)
	history = append(history, responses.ResponseInputItemParamOfFunctionCallOutput("ok"))
	history[len(history)-1].OfFunctionCallOutput.CallID = openai.String(calls(second)[0].CallID)
	bg := itemsParams(history...)
	bg.Tools, bg.Background = responseTools(), openai.Bool(true)
	started, err := c.Responses.New(context.Background(), bg)
	if err != nil {
		t.Fatal(err)
	}
	if done := waitStatus(t, c, started.ID); done.Status != "completed" {
		t.Fatalf("the background response: %s", done.RawJSON())
	}
	var again *http.Response
	_, _ = c.Responses.New(context.Background(), batch, oaioption.WithResponseInto(&again))
	if replayed(again) {
		t.Fatal("the batch whose outputs a background response delivered was replayed from its save")
	}
}
