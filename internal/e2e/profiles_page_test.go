package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Two plan-only subscription profiles after real turns through the pinned
// CLI: one with room (42 % of its 5-hour window), one whose window the
// upstream says is spent. Every operator's page carries a bar of their
// plan windows; its link opens the profile page, which shows the spent
// one kept out until its reset, and reopening it there (the console's own
// form) brings the page back with the profile open and its figures
// forgotten until its next turn.
func TestProfilePageAndPlanBar(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	now := time.Now()
	accounts := &plans{by: map[string]*plan{
		"work":  {token: "sk-ant-oat-work-SECRET", used: 0.42, reset: now.Add(90 * time.Minute), reported: -1},
		"spare": {token: "sk-ant-oat-spare-SECRET", used: 1, reset: now.Add(40 * time.Minute), reported: -1, overage: true},
	}}
	g.up.Respond(accounts.respond)
	wrapper := accounts.tokenProfiles(t, g, "--plan-only")
	cli := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	if out, code := cli.run("", "default", "work"); code != 0 {
		t.Fatalf("default: %s", out)
	}
	g.start("--claude-path", wrapper, "--spares", "0")
	for _, name := range []string{"work", "spare"} {
		if r, body, err := g.post(prompt("a turn on "+name), "X-Meridian-Profile", name, "X-Claude-Code-Session-Id", "bar-"+name); err != nil || r.StatusCode != 200 {
			t.Fatalf("a turn on %s: %v %s", name, err, body)
		}
	}

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	work := `#plans a.plan[data-profile="work"]`
	if got := text(t, b, work); !strings.Contains(got, "default") || !strings.Contains(text(t, b, work+` .w[data-window="five_hour"]`), "42%") {
		t.Fatalf("the bar's work: %q", got)
	}
	spare := `#plans a.plan.spent[data-profile="spare"]`
	if got := text(t, b, spare); !strings.Contains(got, "spent until") || !strings.Contains(got, "100%") {
		t.Fatalf("the bar's spare: %q", got)
	}
	for _, page := range []string{"/", "/providers", "/cluster", "/admin", "/inspector"} {
		b.do(t, chromedp.Navigate(g.url+page))
		for _, name := range []string{"work", "spare"} {
			if n := len(count(t, b, `#plans a.plan[data-profile="`+name+`"]`)); n != 1 {
				t.Errorf("%s: %s is in the bar %d times", page, name, n)
			}
		}
	}
	b.do(t, chromedp.Navigate(g.url+"/panel")) // its own bars: no header
	if n := len(count(t, b, "#plans")); n != 0 {
		t.Errorf("the panel has the header's bar")
	}

	b.do(t, chromedp.Navigate(g.url+"/telemetry"), chromedp.Click(spare))
	b.waitLocation(t, "/profiles")
	card := `section.profile-card[data-profile="spare"]`
	state := get(t, b, chromedp.AttributeValue(chromedp.CSS(card), "data-state")).Value
	if state != "spent" || !strings.Contains(text(t, b, card), "plan spent until") || !strings.Contains(text(t, b, card+` .window[data-window="five_hour"]`), "100%") {
		t.Fatalf("spare's card (%s): %q", state, text(t, b, card))
	}
	if got := text(t, b, `section.profile-card[data-profile="work"]`); !strings.Contains(got, "42%") || !strings.Contains(got, "its plan only") || !strings.Contains(got, "1 live conversation") {
		t.Fatalf("work's card: %q", got)
	}
	b.do(t, chromedp.Click(card+` form[action$="/unbench"] button`))
	b.waitLocation(t, "done=")
	b.do(t, chromedp.WaitVisible(chromedp.CSS("#done")))
	if state := get(t, b, chromedp.AttributeValue(chromedp.CSS(card), "data-state")).Value; state != "open" || !strings.Contains(text(t, b, card), "none since") {
		t.Fatalf("after reopening, spare's card (%s): %q", state, text(t, b, card))
	}
	if n := len(count(t, b, card+" .window")); n != 0 {
		t.Fatalf("spare's figures shown after reopening forgot them: %d windows", n)
	}
	b.screenshot(t, "profiles")
	b.clean(t)
}
