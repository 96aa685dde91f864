package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Two keys whose clients send the same session id hold two
// conversations: two processes, each key's turns continuing its own
// without a replay, neither queued behind nor replayed into the other.
func TestKeysNeverShareAConversation(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "answer to " + r.LastUserText()} })
	keys := map[string]string{"alice": g.addKey(t, "", "alice"), "bob": g.addKey(t, "", "bob")}
	g.start("--spares", "0")

	history := map[string][]sdk.MessageParam{}
	for turn := 1; turn <= 2; turn++ {
		for _, who := range []string{"alice", "bob"} {
			q := who + " asks question " + string(rune('0'+turn))
			history[who] = append(history[who], sdk.NewUserMessage(sdk.NewTextBlock(q)))
			c := keyedAnthropic(g.url, keys[who])
			var resp *http.Response
			msg, err := c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history[who]},
				option.WithHeader("X-Claude-Code-Session-Id", "shared-session"), option.WithResponseInto(&resp))
			if err != nil || messageText(msg) != "answer to "+q || resp.Header.Get("X-Meridian-Replayed") != "" {
				t.Fatalf("%s's turn %d: %v", who, turn, err)
			}
			history[who] = append(history[who], msg.ToParam())
			if turn == 2 {
				// The upstream got this key's history alone, continued
				// on its live process, not replayed.
				reqs := g.up.Requests()
				all := reqs[len(reqs)-1].AllText()
				other := map[string]string{"alice": "bob", "bob": "alice"}[who]
				if strings.Contains(all, "<conversation_history>") || strings.Contains(all, other+" asks") {
					t.Fatalf("%s's second turn reached the upstream as: %s", who, all)
				}
				waitVerdict(t, g, "continuation")
			}
		}
	}
	if pids := g.claudes(); len(pids) != 2 {
		t.Fatalf("%d claude processes for two keys' conversations, want 2", len(pids))
	}
	var list struct {
		Data []struct{ Key string }
	}
	g.getJSON("/v1/sessions", &list)
	if len(list.Data) != 2 || list.Data[0].Key == list.Data[1].Key {
		t.Fatalf("conversations: %+v", list)
	}
	t.Logf("two keys, one session id: %q and %q", list.Data[0].Key, list.Data[1].Key)
}
