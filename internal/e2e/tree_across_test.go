package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// workingUpstream keeps every request about work waiting until it is
// cancelled: a lead and its subagent, both mid-turn.
func workingUpstream(r testkit.Request) testkit.Reply {
	if strings.Contains(r.LastUserText(), "works") {
		return testkit.Reply{Hang: true}
	}
	return testkit.Reply{Text: "answer to " + r.LastUserText()}
}

// leadAndSubagent starts a lead's turn through lead and its subagent's
// through sub (with subHeader besides), waits until both reach the
// upstream, and returns the lead's cancel and the subagent's answer.
func leadAndSubagent(t *testing.T, up *testkit.Upstream, lead, sub *gatewayProc, subHeader ...string) (leave func(), subAnswer <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _, _ = lead.postCtx(ctx, prompt("the lead works"), "X-Claude-Code-Session-Id", "tree-lead") }()
	waitUpstreamHas(t, up, "the lead works")
	answer := make(chan string, 1)
	go func() {
		sctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		resp, body, err := sub.postCtx(sctx, prompt("the subagent works"),
			append([]string{"X-Claude-Code-Session-Id", "tree-lead", "X-Claude-Code-Agent-Id", "explore"}, subHeader...)...)
		if err != nil {
			answer <- err.Error()
			return
		}
		answer <- fmt.Sprint(resp.StatusCode, " ", body)
	}()
	waitUpstreamHas(t, up, "the subagent works")
	return cancel, answer
}

// cancelledBelow checks that the subagent was cancelled with its lead.
func cancelledBelow(t *testing.T, left time.Time, answer <-chan string) {
	t.Helper()
	got := <-answer
	if !strings.HasPrefix(got, "499 ") || !strings.Contains(got, "the one that started it, was cancelled") {
		t.Fatalf("the subagent, after its lead's client left: %s", got)
	}
	t.Logf("the subagent was cancelled %v after its lead's client left", time.Since(left).Round(time.Millisecond))
}

// A lead whose client leaves mid-turn cancels its subagent's request
// running on another host: the cancel follows the session tree across
// the hosts sharing the store.
func TestALeadsCancelReachesItsSubagentOnAnotherHost(t *testing.T) {
	t.Parallel()
	up := testkit.NewUpstream(t)
	up.Respond(workingUpstream)
	_, hosts := routedHosts(t, up)
	leave, answer := leadAndSubagent(t, up, hosts[0], hosts[1])
	leave()
	cancelledBelow(t, time.Now(), answer)
}

// A subagent served under another profile than its lead is cancelled
// with it: one session tree serves every profile.
func TestALeadsCancelReachesItsSubagentUnderAnotherProfile(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(workingUpstream)
	twoProfiles(t, g, "sk-ant-a-SECRET", "sk-ant-b-SECRET")
	g.start("--spares", "0")
	leave, answer := leadAndSubagent(t, g.up, g, g, "X-Meridian-Profile", "b")
	leave()
	cancelledBelow(t, time.Now(), answer)
}
