package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/meridian-gw/meridian/internal/hooks"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func shHook(name, stage, mode, script string) hooks.Spec {
	return hooks.Spec{Name: name, Stage: stage, Mode: mode, Command: []string{"sh", "-c", script}, Timeout: 20 * time.Second}
}

// The hooks on a real turn (claude 2.1.332, official SDKs): a WebAssembly
// transform adds an Idempotency-Key header to each request, so a client
// that sends none has its identical retry answered from the saved answer
// (one upstream turn for two requests); an observer counts every request;
// an answer transform adds a header to a whole answer; a streamed answer
// passes untouched and its observer sees it once it ended.
func TestHooksOnRealTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count, streams := filepath.Join(dir, "count"), filepath.Join(dir, "streams")
	s := newStack(t, stackOptions{hooks: []hooks.Spec{
		{Name: "idempotent", Stage: hooks.StageRequest, Mode: hooks.ModeTransform, Wasm: testkit.HookModule(t),
			Args: []string{"tag", "idempotency-key", "hooked-1"}, APIs: []string{"messages"}, Timeout: 20 * time.Second},
		shHook("count", hooks.StageRequest, hooks.ModeObserve, `cat >/dev/null; echo seen >> `+count),
		shHook("audit", hooks.StageAnswer, hooks.ModeTransform,
			`cat >/dev/null; printf '{"headers":{"content-type":"application/json","x-audited":"yes"}}'`),
		shHook("streams", hooks.StageAnswer, hooks.ModeObserve, `{ grep -o '\[DONE\]' || true; } >> `+streams),
	}})
	s.Upstream.Always(testkit.Reply{Text: "hooked answer"})
	c := s.client()
	var first, again *http.Response
	msg, err := c.Messages.New(context.Background(), simpleParams("hello hooks"), option.WithResponseInto(&first))
	if err != nil {
		t.Fatal(err)
	}
	upstream := len(s.Upstream.Requests())
	if msg.Content[0].Text != "hooked answer" || first.Header.Get("X-Audited") != "yes" || first.Header.Get("Request-Id") == "" {
		t.Fatalf("answer %s, headers %v", msg.RawJSON(), first.Header)
	}
	if _, err := c.Messages.New(context.Background(), simpleParams("hello hooks"), option.WithResponseInto(&again)); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get("X-Meridian-Replayed") != "true" || len(s.Upstream.Requests()) != upstream {
		t.Fatalf("the retry was not answered from the saved answer: replayed %q, upstream %d then %d",
			again.Header.Get("X-Meridian-Replayed"), upstream, len(s.Upstream.Requests()))
	}
	// A stream passes the answer transform untouched; its observer sees
	// it once it ended.
	var streamed *http.Response
	got, _, err := streamChat(t, s.chatClient(), chatParams(openai.UserMessage("a stream, please")), oaioption.WithResponseInto(&streamed))
	if err != nil || got.Choices[0].Message.Content != "hooked answer" || streamed.Header.Get("X-Audited") != "" {
		t.Fatalf("stream %+v, %v", got, err)
	}
	var whole *http.Response
	if _, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi")), oaioption.WithResponseInto(&whole)); err != nil ||
		whole.Header.Get("X-Audited") != "yes" {
		t.Fatalf("chat: %v", err)
	}
	if err := testkit.WaitFor(10*time.Second, func() error {
		if b, _ := os.ReadFile(streams); strings.Count(string(b), "[DONE]") != 1 {
			return errors.New("the stream's observer has not seen it")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "seen") != 4 {
		t.Fatalf("the observer counted %q for 4 requests", b)
	}
}

// A hook that hangs fails its request at its bound with a 504 in the
// client's own shape, and a request larger than a hook takes is refused
// with 413: neither reaches claude.
func TestHookFailuresAnswerInTheClientsShape(t *testing.T) {
	t.Parallel()
	hang := shHook("hang", hooks.StageRequest, hooks.ModeObserve, `cat >/dev/null; sleep 600`)
	hang.Timeout, hang.APIs = 300*time.Millisecond, []string{"chat"}
	small := shHook("small", hooks.StageRequest, hooks.ModeObserve, `cat >/dev/null`)
	small.MaxBytes, small.APIs = 2000, []string{"messages"}
	s := newStack(t, stackOptions{hooks: []hooks.Spec{hang, small}})
	s.Upstream.Always(testkit.Reply{Text: "never"})

	start := time.Now()
	_, err := s.chatClient().Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi")))
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != http.StatusGatewayTimeout ||
		!strings.Contains(oerr.Message, "request hook hang did not finish within 300ms") {
		t.Fatalf("chat: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the hanging hook held the request %s", took)
	}

	_, err = s.client(option.WithMaxRetries(0)).Messages.New(context.Background(), simpleParams(strings.Repeat("long ", 500)))
	var aerr *sdk.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != http.StatusRequestEntityTooLarge ||
		!strings.Contains(aerr.RawJSON(), `"type":"request_too_large"`) || !strings.Contains(aerr.RawJSON(), "hook small") {
		t.Fatalf("messages: %v", err)
	}
	if n := len(s.Upstream.Requests()); n != 0 {
		t.Fatalf("%d upstream requests for two refused ones", n)
	}
}
