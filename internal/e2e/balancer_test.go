package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Behind a real load balancer (deploy/haproxy.cfg, round robin over three
// hosts), a client's conversation runs every turn on the one claude
// process that ran its first, whichever host each request reached; a
// background response is polled, streamed and cancelled through it.
func TestBehindALoadBalancer(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "long story") {
			return testkit.Reply{Chunks: []string{"once ", "upon "}, StallAfter: 4}
		}
		return testkit.Reply{Text: "answer to " + r.LastUserText()}
	})
	_, hosts := routedHosts(t, up)
	config, err := os.ReadFile("../../deploy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var backends []string
	ids := map[string]*gatewayProc{}
	for _, g := range hosts {
		u, _ := url.Parse(g.url)
		backends = append(backends, u.Host)
		ids[hostID(t, g)] = g
	}
	lb := testkit.HAProxy(t, string(config), backends)

	c := sdk.NewClient(option.WithBaseURL(lb.URL), option.WithAPIKey("client-key"), option.WithMaxRetries(0),
		option.WithHeader("X-Claude-Code-Session-Id", "balanced"))
	params := sdk.MessageNewParams{Model: "test-model", MaxTokens: 100}
	var holder string
	var pid int
	for turn := 1; turn <= 6; turn++ {
		q := fmt.Sprintf("question %d", turn)
		params.Messages = append(params.Messages, sdk.NewUserMessage(sdk.NewTextBlock(q)))
		var resp *http.Response
		m, err := c.Messages.New(context.Background(), params, option.WithResponseInto(&resp))
		if err != nil || messageText(m) != "answer to "+q {
			t.Fatalf("turn %d through the balancer: %v %v", turn, err, m)
		}
		served := resp.Header.Get("X-Meridian-Host")
		if turn == 1 {
			holder = served
		}
		g, ok := ids[served]
		if !ok || served != holder {
			t.Fatalf("turn %d was answered by %q, turn 1 by %q", turn, served, holder)
		}
		pids := g.claudes()
		if len(pids) != 1 || (pid != 0 && pids[0] != pid) {
			t.Fatalf("turn %d: the holder runs %v, turn 1 ran %d", turn, pids, pid)
		}
		pid = pids[0]
		params.Messages = append(params.Messages, m.ToParam())
	}
	// The balancer did spread them: the holder got turns relayed by both
	// other hosts.
	var relayed int
	if err := testkit.WaitFor(5*time.Second, func() error {
		if relayed = strings.Count(ids[holder].log.String(), " via="); relayed < 3 {
			return fmt.Errorf("the holder had %d of 6 turns relayed: the balancer did not spread them", relayed)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of 6 turns reached another host first and were relayed to the holder", relayed)

	// A background response started through the balancer is polled,
	// streamed and cancelled through it, whichever host each call reaches.
	oc := openai.NewClient(oaioption.WithBaseURL(lb.URL+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	ctx := context.Background()
	started, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "test-model", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("tell a long story")}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // one poll per host
		got, err := oc.Responses.Get(ctx, started.ID, responses.ResponseGetParams{})
		if err != nil || got.ID != started.ID {
			t.Fatalf("polling through the balancer: %v %v", err, got)
		}
	}
	stream := oc.Responses.GetStreaming(ctx, started.ID, responses.ResponseGetParams{})
	for stream.Next() && stream.Current().Type != "response.output_text.delta" {
	}
	if stream.Err() != nil {
		t.Fatal(stream.Err())
	}
	cancelled, err := oc.Responses.Cancel(ctx, started.ID)
	if err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("cancel through the balancer: %v %v", err, cancelled)
	}
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the stream after the cancel: %v", err)
	}
}

// Behind open-source nginx (deploy/nginx.conf), which cannot check
// /ready, a request that reaches a draining host is refused there with
// 503 before anything runs and nginx sends it on to the next host: the
// client never sees the drain.
func TestBehindNginxADrainingHostIsPassedOver(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	gate := make(chan struct{})
	up.Respond(func(r testkit.Request) testkit.Reply {
		if strings.Contains(r.LastUserText(), "slow") {
			return testkit.Reply{Text: "slow answer", Gate: gate}
		}
		last := r.LastUserText()
		return testkit.Reply{Text: "answer to " + last[strings.LastIndex(last, "\n")+1:]}
	})
	_, hosts := routedHosts(t, up)
	config, err := os.ReadFile("../../deploy/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	var backends []string
	for _, g := range hosts {
		u, _ := url.Parse(g.url)
		backends = append(backends, u.Host)
	}
	lb := testkit.Nginx(t, string(config), backends)
	draining := hosts[2]
	slow := draining.postAsync(prompt("slow"))
	waitRequests(t, up, 1)
	draining.drain(t)
	through := &gatewayProc{t: t, url: lb.URL}
	for n := 1; n <= 6; n++ {
		resp, body, err := through.post(turnBody("question", n), "X-Claude-Code-Session-Id", "passed-over")
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, fmt.Sprintf("answer to question %d", n)) {
			t.Fatalf("turn %d through nginx while a host drains: %v %v %s", n, err, resp, body)
		}
	}
	refused := strings.Count(draining.log.String(), "refused while draining")
	if refused == 0 {
		t.Fatal("no request reached the draining host: nginx's retry was not exercised")
	}
	t.Logf("the draining host refused %d requests, each answered by the next host", refused)
	close(gate)
	if got := <-slow; !strings.HasPrefix(got, "200 ") {
		t.Fatalf("the draining host's running turn: %s", got)
	}
}
