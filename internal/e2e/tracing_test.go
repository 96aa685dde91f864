package e2e

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// collector is an OTLP/HTTP receiver: it keeps every span posted to
// /v1/traces with the host.name of its resource.
type collector struct {
	mu    sync.Mutex
	spans []hostSpan
}

type hostSpan struct {
	host string
	*tracev1.Span
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		host := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "host.name" {
				host = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, hostSpan{host, s})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil)
}

// of returns the spans of one trace.
func (c *collector) of(traceID []byte) []hostSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []hostSpan
	for _, s := range c.spans {
		if string(s.TraceId) == string(traceID) {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s *tracev1.Span) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attributes {
		switch v := a.GetValue(); {
		case v.GetStringValue() != "":
			m[a.Key] = v.GetStringValue()
		case v.GetArrayValue() != nil:
			var vs []string
			for _, e := range v.GetArrayValue().Values {
				vs = append(vs, e.GetStringValue())
			}
			m[a.Key] = strings.Join(vs, ",")
		default:
			m[a.Key] = v.GetIntValue()
		}
	}
	return m
}

// A conversation held by host A gets its second turn through host B,
// under a client's traceparent: the collector gets one trace from both
// hosts, the client's span its root's parent, A's server span the child
// of B's forward span, and the turn's spans the GenAI attributes with
// the upstream's token counts. The spans hold no prompt.
func TestTraceAcrossTwoHosts(t *testing.T) {
	t.Parallel()
	col := &collector{}
	receiver := httptest.NewServer(col)
	t.Cleanup(receiver.Close)
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up := testkit.NewUpstream(t)
	up.Always(testkit.Reply{Text: "traced answer", Usage: testkit.Usage{InputTokens: 21, OutputTokens: 9, CacheReadInputTokens: 4}})
	a, b := newHost(t, up), newHost(t, up)
	for i, g := range []*gatewayProc{a, b} {
		g.env = append(g.env, "OTEL_BSP_SCHEDULE_DELAY=100")
		g.startOn(fmt.Sprintf("127.0.0.%d", i+2), dsn, "--cluster-key", "test-cluster-key", "--otlp-endpoint", receiver.URL)
	}
	first := prompt("SECRET-PROMPT-first turn")
	if resp, body, err := a.post(first, "X-Claude-Code-Session-Id", "traced"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first turn: %v %s", err, body)
	}
	const traceHex, parentHex = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	traceID, _ := hex.DecodeString(traceHex)
	second, _ := json.Marshal(map[string]any{"model": "test-model", "max_tokens": 100, "messages": []map[string]string{
		{"role": "user", "content": "SECRET-PROMPT-first turn"}, {"role": "assistant", "content": "traced answer"},
		{"role": "user", "content": "SECRET-PROMPT-second turn"}}})
	resp, body, err := b.post(string(second), "X-Claude-Code-Session-Id", "traced", "Traceparent", "00-"+traceHex+"-"+parentHex+"-01")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Host") != hostID(t, a) {
		t.Fatalf("second turn through b: %v %d %s (answered by %s)", err, resp.StatusCode, body, resp.Header.Get("X-Meridian-Host"))
	}
	named := map[string]hostSpan{}
	ha, hb := hostID(t, a), hostID(t, b)
	// Each host exports on its own schedule: wait for every span asked
	// for below, not for a count of them.
	want := []string{hb + " POST /v1/messages", hb + " forward", ha + " POST /v1/messages", ha + " turn", ha + " claude turn", hb + " dispatch", hb + " key check"}
	waitTrue(t, 15*time.Second, "both hosts' spans", func() bool {
		clear(named)
		for _, s := range col.of(traceID) {
			named[s.host+" "+s.Name] = s
		}
		for _, n := range want {
			if _, ok := named[n]; !ok {
				return false
			}
		}
		return true
	})
	bServer, bForward, aServer := named[hb+" POST /v1/messages"], named[hb+" forward"], named[ha+" POST /v1/messages"]
	aTurn, aCLI, bDispatch := named[ha+" turn"], named[ha+" claude turn"], named[hb+" dispatch"]
	for name, s := range map[string]hostSpan{"b's server span": bServer, "b's forward": bForward, "a's server span": aServer,
		"a's turn": aTurn, "a's claude turn": aCLI, "b's dispatch": bDispatch, "b's key check": named[hb+" key check"]} {
		if s.Span == nil {
			var have []string
			for n := range named {
				have = append(have, n)
			}
			t.Fatalf("no %s among %v", name, have)
		}
	}
	if hex.EncodeToString(bServer.ParentSpanId) != parentHex {
		t.Fatalf("b's server span's parent is %x, want the client's %s", bServer.ParentSpanId, parentHex)
	}
	if string(bForward.ParentSpanId) != string(bDispatch.SpanId) || string(aServer.ParentSpanId) != string(bForward.SpanId) {
		t.Fatal("the hop is not dispatch → forward → the holder's server span")
	}
	if string(aTurn.ParentSpanId) != string(aServer.SpanId) && string(aTurn.ParentSpanId) != string(named[ha+" dispatch"].SpanId) {
		t.Fatal("a's turn is not under a's server span")
	}
	if string(aCLI.ParentSpanId) != string(aTurn.SpanId) {
		t.Fatal("the CLI's turn is not under the turn")
	}
	ta, tc := attrs(aTurn.Span), attrs(aCLI.Span)
	if ta["gen_ai.request.model"] != "test-model" || ta["gen_ai.provider.name"] != "anthropic" || ta["gen_ai.operation.name"] != "chat" ||
		ta["gen_ai.usage.input_tokens"] != int64(25) || ta["gen_ai.usage.output_tokens"] != int64(9) {
		t.Fatalf("a's turn: %v", ta)
	}
	if tc["gen_ai.response.model"] != "test-model" || tc["gen_ai.usage.input_tokens"] != int64(25) || tc["gen_ai.usage.output_tokens"] != int64(9) ||
		tc["gen_ai.response.finish_reasons"] != "end_turn" {
		t.Fatalf("the CLI's turn: %v", tc)
	}
	if attrs(aServer.Span)["http.response.status_code"] != int64(200) {
		t.Fatalf("a's server span: %v", attrs(aServer.Span))
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, s := range col.spans {
		raw, _ := proto.Marshal(s.Span)
		if strings.Contains(string(raw), "SECRET-PROMPT") {
			t.Fatalf("a span holds the prompt: %s", s.Name)
		}
	}
}
