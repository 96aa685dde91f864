package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// `meridian profile add`, `default` and `remove` reach a serve that is
// already running: a profile added is served (its key reaches the
// upstream), a new default answers requests that name none, and a removed
// profile is refused by name — all without a restart.
func TestProfileChangesReachARunningServe(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(func(r testkit.Request) testkit.Reply { return testkit.Reply{Text: "key " + r.Header.Get("X-Api-Key")} })
	g.start()
	p := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	named := func(profile string) (int, string, string) {
		t.Helper()
		var header []string
		if profile != "" {
			header = []string{"X-Meridian-Profile", profile}
		}
		resp, body, err := g.post(prompt("who answers?"), header...)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("X-Meridian-Profile"), body
	}
	if code, _, body := named("late"); code != 400 || !strings.Contains(body, "unknown profile") {
		t.Fatalf("a profile not yet added: %d %s", code, body)
	}
	if out, code := p.run("sk-ant-late-SECRET\n", "add", "late", "--kind", "api", "--base-url", g.up.URL, "--priority", "1"); code != 0 {
		t.Fatalf("add: %s", out)
	}
	waitServed := func(what string, ok func() error) {
		t.Helper()
		if err := testkit.WaitFor(10*time.Second, ok); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitServed("the added profile", func() error {
		if code, by, body := named("late"); code != 200 || by != "late" || !strings.Contains(body, "key sk-ant-late-SECRET") {
			return fmt.Errorf("%d by %q: %.200s", code, by, body)
		}
		return nil
	})
	if out, code := p.run("", "default", "late"); code != 0 {
		t.Fatalf("default: %s", out)
	}
	waitServed("the new default", func() error {
		if code, by, _ := named(""); code != 200 || by != "late" {
			return fmt.Errorf("%d by %q", code, by)
		}
		return nil
	})
	if out, code := p.run("", "remove", "late"); code != 0 {
		t.Fatalf("remove: %s", out)
	}
	waitServed("the removed profile", func() error {
		if code, _, body := named("late"); code != 400 || !strings.Contains(body, "unknown profile") {
			return fmt.Errorf("%d %.200s", code, body)
		}
		if code, by, _ := named(""); code != 200 || by != "default" {
			return fmt.Errorf("the default after the removal: %d by %q", code, by)
		}
		return nil
	})
	if !strings.Contains(g.log.String(), "profiles changed") {
		t.Error("the log does not say the profiles changed")
	}
}
