package gateway

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/session"
)

// A request that named its conversation keeps that name through the
// copies the routing, the profile's choice and the answer take, and the
// gateway reads it instead of digesting the messages again; without it
// the gateway works the name out, and alike.
func TestAnIdentifiedRequestNamesItsConversationOnce(t *testing.T) {
	h := http.Header{"X-Claude-Code-Session-Id": {"s-1"}}
	body := &anthropic.MessagesRequest{Model: "m", Messages: []anthropic.Message{{Role: "user", Content: []anthropic.ContentBlock{{Type: "text", Text: "hello", Raw: []byte(`{"type":"text","text":"hello"}`)}}}}}
	plain := Request{Body: body, Header: h, Caller: "pi"}
	want := identityOf(plain)
	if want.Key == "" {
		t.Fatal("the request names no conversation")
	}
	named := plain.Identified()
	g := &Gateway{cfg: Config{Sessions: &session.Store{}}}
	if got := g.identify(named); !reflect.DeepEqual(got, want) {
		t.Fatalf("identified %+v, want %+v", got, want)
	}
	if got := g.identify(plain); !reflect.DeepEqual(got, want) {
		t.Fatalf("worked out %+v, want %+v", got, want)
	}
	// A copy reads the name given, not the header it now carries.
	moved := named
	moved.Header = http.Header{"X-Claude-Code-Session-Id": {"s-2"}}
	if got := g.identify(moved); got.Key != want.Key {
		t.Fatalf("a copy of an identified request was named again: %q", got.Key)
	}
	if got := (&Gateway{}).identify(named); got.Key != "" {
		t.Fatalf("a gateway that keeps no conversations named one: %+v", got)
	}
}
