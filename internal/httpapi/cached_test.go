package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// cutAfter is a hop that loses the end of an answer: the gateway writes
// it whole, the client reads n bytes of it and then the connection breaks.
func cutAfter(n int) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if err != nil || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:min(n, len(body))]), errReader{}))
		return resp, nil
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// A stream whose delivery broke off after the gateway had answered is
// recovered by sending the same request with Cache-Control: only-if-cached:
// the saved answer comes back whole, and nothing runs again. A request
// never answered gets 504 in the client's own error shape and still
// nothing runs (and nothing is left that would refuse running it after),
// and only-if-cached without a request id is refused the same way.
func TestOnlyIfCachedRecoversABrokenStream(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "a long answer that the hop cut short"})
	history := []sdk.MessageParam{userMessage("explain the build")}
	keyed := option.WithHeader("X-Meridian-Request-Id", "opencode/s1/m1/build")

	st := s.client(keyed, option.WithMiddleware(cutAfter(300))).Messages.NewStreaming(context.Background(), params(history))
	for st.Next() {
	}
	if st.Err() == nil {
		t.Fatal("the cut stream ended cleanly")
	}
	calls := len(s.Upstream.Requests())

	var resp *http.Response
	recovered := send(t, s.client(keyed), history, true, &resp, option.WithHeader("Cache-Control", "only-if-cached"))
	if !replayed(resp) || recovered.Content[0].Text != "a long answer that the hop cut short" || recovered.StopReason != "end_turn" {
		t.Fatalf("recovered %s (replayed %v)", mustJSON(t, recovered), replayed(resp))
	}
	if n := len(s.Upstream.Requests()); n != calls {
		t.Fatalf("the recovery reached the upstream: %d calls, was %d", n, calls)
	}

	// Never answered: 504, nothing runs; then without the directive it runs.
	other := option.WithHeader("X-Meridian-Request-Id", "opencode/s1/m2/build")
	_, err := s.client(other).Messages.New(context.Background(), params(history), option.WithHeader("Cache-Control", "no-cache, only-if-cached"))
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusGatewayTimeout || !strings.Contains(ae.RawJSON(), "timeout_error") || !strings.Contains(ae.RawJSON(), "nothing was run") {
		t.Fatalf("a miss: %v", err)
	}
	if n := len(s.Upstream.Requests()); n != calls {
		t.Fatalf("a miss reached the upstream: %d calls, was %d", n, calls)
	}
	if msg := send(t, s.client(other), history, false, nil); msg.Content[0].Text == "" || len(s.Upstream.Requests()) != calls+1 {
		t.Fatalf("the same request without only-if-cached: %s, %d calls", mustJSON(t, msg), len(s.Upstream.Requests()))
	}

	// No id: no answer of it is ever saved; in the OpenAI shape on its routes.
	_, err = s.chatClient().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, oaioption.WithHeader("Cache-Control", "only-if-cached"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusGatewayTimeout || !strings.Contains(oe.Message, "X-Meridian-Request-Id") {
		t.Fatalf("only-if-cached without an id on chat: %v", err)
	}
	if n := len(s.Upstream.Requests()); n != calls+1 {
		t.Fatalf("a request without an id reached the upstream: %d calls", n)
	}
}
