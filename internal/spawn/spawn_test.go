package spawn

import (
	"strings"
	"testing"
	"time"
)

func TestTransitions(t *testing.T) {
	all := []Status{Queued, Running, Finalizing, Succeeded, Failed, Cancelled}
	allowed := map[string]bool{
		"queued>running": true, "queued>succeeded": true, "queued>failed": true, "queued>cancelled": true,
		"running>finalizing": true, "running>succeeded": true, "running>failed": true, "running>cancelled": true,
		"finalizing>succeeded": true, "finalizing>failed": true, "finalizing>cancelled": true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := CanTransition(from, to); got != allowed[string(from)+">"+string(to)] {
				t.Errorf("%s → %s: %v", from, to, got)
			}
		}
	}
	if CanTransition("bogus", Running) || Status("timed_out").Valid() {
		t.Error("unknown statuses accepted")
	}
}

func TestTerminalAuthority(t *testing.T) {
	cases := []struct {
		current Status
		origin  Origin
		writer  Origin
		wins    bool
	}{
		{Running, "", Runner, true},
		{Running, "", Reconciler, true},
		{Succeeded, Runner, Cancel, false},      // first authoritative wins
		{Cancelled, Cancel, Runner, false},      // first authoritative wins
		{Failed, Reconciler, Runner, true},      // a fact replaces a guess, even later
		{Failed, Reconciler, Reconciler, false}, // first reconciler wins
		{Succeeded, Launcher, Reconciler, false},
	}
	for _, c := range cases {
		if got := TerminalWins(c.current, c.origin, c.writer); got != c.wins {
			t.Errorf("%s by %s, then %s: %v", c.current, c.origin, c.writer, got)
		}
	}
}

func TestOwed(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	spawns := []Spawn{
		{ID: "p3", N: 3, ParentID: "", Status: Succeeded, Finished: at(30)},
		{ID: "p1", N: 1, ParentID: "", Status: Failed, Finished: at(10)},
		{ID: "p2", N: 2, ParentID: "", Status: Running},
		{ID: "p4", N: 4, ParentID: "p9", Status: Succeeded, Finished: at(5)}, // someone else's child
		{ID: "p5", N: 5, ParentID: "", Status: Succeeded, Finished: at(20)},
		{ID: "p6", N: 6, ParentID: "", Status: Cancelled, Finished: at(40)},
	}
	got := Owed("", spawns, map[string]bool{"p5": true}, map[string]bool{"p6": true})
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "p1,p3" {
		t.Fatalf("owed %v", ids)
	}
	if a := ActiveChildren("", spawns); len(a) != 1 || a[0].ID != "p2" {
		t.Fatalf("active %v", a)
	}
}

func TestHeaderIsHeaderOnly(t *testing.T) {
	s := Spawn{ID: "p7", Status: Failed, ExitCode: 1, Model: "sonnet", Cwd: "/other", Error: "upstream\nrefused", Duration: 3 * time.Second, Desc: "fix tests"}
	h := Header(s, "/lead")
	for _, want := range []string{"p7 failed (exit 1)", "worker claude (sonnet)", "3s", "fix tests", "failure: upstream refused", "task directory: /other", "report: meridian spawn show p7"} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(Header(Spawn{ID: "p8", Status: Succeeded, Cwd: "/lead"}, "/lead"), "task directory") {
		t.Error("the lead's own directory is repeated")
	}
	text := DeliveryText([]Spawn{s, {ID: "p8", Status: Succeeded}}, "/lead")
	if !strings.HasPrefix(text, "2 background spawns finished:\n") || strings.Count(text, "meridian spawn show") != 2 {
		t.Fatalf("delivery:\n%s", text)
	}
}

func TestReap(t *testing.T) {
	now := time.Unix(10_000, 0)
	base := ReapFacts{Status: Running, Created: now.Add(-time.Hour), LastActivity: now.Add(-time.Hour), Now: now,
		Window: DefaultReapWindow, Grace: DefaultReapGrace}
	cases := []struct {
		name string
		f    func(*ReapFacts)
		want ReapDecision
	}{
		{"dead and stale", func(*ReapFacts) {}, ReapDecision{Act: true, Status: Failed, Reason: "orphan_run"}},
		{"finalizing", func(f *ReapFacts) { f.Status = Finalizing }, ReapDecision{Act: true, Status: Failed, Reason: "orphan_finalization"}},
		{"complete report", func(f *ReapFacts) { f.ReportComplete = true }, ReapDecision{Act: true, Status: Succeeded}},
		{"alive", func(f *ReapFacts) { f.RunnerAlive = true }, ReapDecision{}},
		{"primary session ended", func(f *ReapFacts) { f.Primary = true; f.LastActivity = now }, ReapDecision{Act: true, Status: Succeeded}},
		{"primary session running", func(f *ReapFacts) { f.Primary = true; f.RunnerAlive = true }, ReapDecision{}},
		{"primary too young", func(f *ReapFacts) { f.Primary = true; f.Created = now }, ReapDecision{}},
		{"recent activity", func(f *ReapFacts) { f.LastActivity = now.Add(-time.Minute) }, ReapDecision{}},
		{"young", func(f *ReapFacts) { f.Created = now.Add(-5 * time.Second) }, ReapDecision{}},
		{"terminal", func(f *ReapFacts) { f.Status = Succeeded }, ReapDecision{}},
	}
	for _, c := range cases {
		f := base
		c.f(&f)
		if got := Reap(f); got != c.want {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestParseID(t *testing.T) {
	for id, n := range map[string]int{"p1": 1, "p42": 42} {
		if got, err := ParseID(id); err != nil || got != n {
			t.Errorf("%s: %d %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "p", "p0", "x1", "p01", "p1x", "1"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSummaryAndClip(t *testing.T) {
	s := Spawn{ID: "p7", Status: Failed, Model: "m", Duration: 1500 * time.Millisecond, CostUSD: 0.25, Error: "boom\nline two", Desc: "fix the build"}
	if got, want := Summary(s), "p7    failed     claude (m) · 1.5s · $0.2500 · boom line two · fix the build"; got != want {
		t.Fatalf("summary:\n%q\nwant\n%q", got, want)
	}
	if got := Clip("héllo wörld", 2); got != "h…" {
		t.Fatalf("clip cut inside a character: %q", got)
	}
	if got := Clip("  a \n b  ", 10); got != "a b" {
		t.Fatalf("clip: %q", got)
	}
}

func TestEnviron(t *testing.T) {
	set := ChildEnv("sp_1", 2, "/p", "/d")
	set[EnvHeartbeat] = ""
	got := Environ([]string{"PATH=/bin", EnvID + "=old", EnvHeartbeat + "=1s", "EMPTY="}, set)
	want := map[string]bool{"PATH=/bin": true, "EMPTY=": true, EnvID + "=sp_1": true, EnvDepth + "=2": true,
		EnvProject + "=/p": true, EnvDataDir + "=/d": true}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for _, kv := range got {
		if !want[kv] {
			t.Errorf("unexpected %q in %q", kv, got)
		}
	}
}

// Spawns that finished at the same moment, and running ones (no finish
// yet), come in creation order.
func TestAgeTieBreak(t *testing.T) {
	at := time.Unix(50, 0)
	spawns := []Spawn{
		{ID: "p12", N: 12, Status: Succeeded, Finished: at},
		{ID: "p3", N: 3, Status: Failed, Finished: at},
		{ID: "p9", N: 9, Status: Running},
		{ID: "p2", N: 2, Status: Running},
	}
	ids := func(ss []Spawn) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return strings.Join(out, ",")
	}
	if got := ids(Owed("", spawns, nil, nil)); got != "p3,p12" {
		t.Errorf("owed %s, want p3,p12", got)
	}
	if got := ids(ActiveChildren("", spawns)); got != "p2,p9" {
		t.Errorf("active %s, want p2,p9", got)
	}
}

func TestPrunable(t *testing.T) {
	now := time.Unix(10000, 0)
	done := Spawn{Status: Succeeded, Finished: now.Add(-2 * time.Hour)}
	if !Prunable(done, true, now, time.Hour) {
		t.Error("a seen, old spawn is kept")
	}
	if Prunable(done, false, now, time.Hour) {
		t.Error("an owed spawn is pruned")
	}
	if Prunable(done, true, now, 3*time.Hour) {
		t.Error("a spawn within the retention is pruned")
	}
	if Prunable(Spawn{Status: Running}, true, now, 0) {
		t.Error("a running spawn is pruned")
	}
}
