package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The OpenAI APIs replay too: a Responses request delivering function
// outputs, sent again, gets the same response (same id, same new call)
// and a chat request the same completion; neither reaches the upstream
// twice.
func TestOpenAIRetriesAreReplayed(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Respond(threeSteps)
	c := s.chatClient()

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
