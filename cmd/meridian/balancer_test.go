package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Behind a real load balancer (deploy/haproxy.cfg, round robin over three
// hosts), a client's conversation runs every turn on the one claude
// process that ran its first, whichever host each request reached.
func TestBehindALoadBalancer(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "answer to " + r.LastUserText()} })
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
	relayed := strings.Count(ids[holder].log.String(), " via=")
	if relayed < 3 {
		t.Fatalf("the holder had %d of 6 turns relayed: the balancer did not spread them", relayed)
	}
	t.Logf("%d of 6 turns reached another host first and were relayed to the holder", relayed)
}
