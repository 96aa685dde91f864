package e2e

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A conversation that failed over from a to b leaves a copy under a. By
// default the copy stays (a restart's sweep keeps it and its transcript);
// with --profile-copy-grace the sweep forgets it once unused that long
// and the transcript it pinned is deleted, while b's stays. Back on a,
// the conversation replays its whole history into a fresh session.
func TestProfileCopiesArePrunedAfterTheirGrace(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	const keyA, keyB = "sk-ant-pa-SECRET", "sk-ant-pb-SECRET"
	var aRefuses, bRefuses atomic.Bool
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		// A two-second wait, told to a CLI left one retry: the bench it
		// earns is over before the restarts below are.
		limited := testkit.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "slow down", Headers: map[string]string{"retry-after": "2"}}
		switch r.Header.Get("X-Api-Key") {
		case keyA:
			if aRefuses.Load() {
				return limited
			}
			return testkit.Reply{Text: "a answered"}
		case keyB:
			if bRefuses.Load() {
				return limited
			}
		}
		return testkit.Reply{Text: "b answered"}
	})
	g.env = append(g.env, "CLAUDE_CODE_MAX_RETRIES=1")
	twoProfiles(t, g, keyA, keyB)
	restart := func(args ...string) {
		t.Helper()
		if g.cmd != nil {
			if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			_ = g.cmd.Wait()
		}
		g.start(append([]string{"--failover", "--transcript-grace", "1ms"}, args...)...)
	}
	restart()

	resp, body, err := g.post(prompt("first"), "X-Claude-Code-Session-Id", "pc-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "a" {
		t.Fatalf("first turn: %v %v %s", err, resp.Header, body)
	}
	aRefuses.Store(true)
	two := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a answered"},{"role":"user","content":"and then?"}]}`
	resp, body, err = g.post(two, "X-Claude-Code-Session-Id", "pc-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "b" {
		t.Fatalf("second turn: %v %v %s", err, resp.Header, body)
	}
	aRefuses.Store(false)
	if !transcriptHas(t, g, "a", "a answered") || !transcriptHas(t, g, "b", "and then?") {
		t.Fatal("the profiles' transcripts are not there to begin with")
	}

	// Without the flag, a restart's sweep keeps a's copy.
	restart()
	if testkit.WaitFor(2*time.Second, func() error {
		if transcriptHas(t, g, "a", "a answered") {
			return errors.New("kept")
		}
		return nil
	}) == nil || strings.Contains(g.log.String(), "pruned conversations' copies") {
		t.Fatal("a's copy was pruned without --profile-copy-grace")
	}

	// With it, the sweep at start prunes it: one copy, its transcript.
	restart("--profile-copy-grace", "1ms")
	if !g.logShows("pruned conversations' copies under profiles they left") || !strings.Contains(g.log.String(), "count=1") {
		t.Fatalf("no prune logged:\n%s", g.log.String())
	}
	if err := testkit.WaitFor(5*time.Second, func() error {
		if transcriptHas(t, g, "a", "a answered") {
			return errors.New("a's transcript is still there")
		}
		return nil
	}); err != nil {
		t.Fatal("a's transcript outlived its copy")
	}
	if !transcriptHas(t, g, "b", "and then?") {
		t.Fatal("b's transcript, still the conversation's, was deleted")
	}

	// Back on a (b refuses): the whole history is replayed there.
	bRefuses.Store(true)
	three := `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":"first"},{"role":"assistant","content":"a answered"},{"role":"user","content":"and then?"},{"role":"assistant","content":"b answered"},{"role":"user","content":"third"}]}`
	resp, body, err = g.post(three, "X-Claude-Code-Session-Id", "pc-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "a" || !strings.Contains(body, "a answered") {
		t.Fatalf("third turn: %v %v %s", err, resp.Header, body)
	}
	// a holds nothing of it now: a fresh session ("new" to a) given the
	// whole history.
	waitVerdict(t, g, "new")
	reqs := g.up.Requests()
	last := reqs[len(reqs)-1]
	if last.Header.Get("X-Api-Key") != keyA || !strings.Contains(last.AllText(), "b answered") || !strings.Contains(last.AllText(), "and then?") {
		t.Fatalf("the replay on a lacks the history:\n%s", last.RawBody)
	}
}
