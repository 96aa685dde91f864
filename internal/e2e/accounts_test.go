package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// plan is one subscription's 5-hour window as the fake upstream reports
// it in the rate-limit headers the API sends an OAuth login: each model
// request it answers uses step more of it.
type plan struct {
	token    string
	used     float64 // what the next answer reports
	step     float64
	reset    time.Time
	reported float64 // what the last answer reported; -1: none yet
	// overage: the window is spent and the upstream serves the request
	// from the account's paid extra usage.
	overage bool
}

// plans are the fake upstream's accounts, told apart by their tokens.
type plans struct {
	mu sync.Mutex
	by map[string]*plan
}

func (p *plans) respond(r testkit.Request) testkit.Reply {
	p.mu.Lock()
	defer p.mu.Unlock()
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, a := range p.by {
		if a.token != token {
			continue
		}
		used := math.Round(a.used*100) / 100
		a.reported, a.used = used, a.used+a.step
		reset, weekly := fmt.Sprint(a.reset.Unix()), fmt.Sprint(a.reset.Add(100*time.Hour).Unix())
		status := "allowed"
		if used >= 1 {
			status = "allowed_warning"
		}
		extra := map[string]string{}
		if a.overage {
			used, status = 1, "rejected"
			extra = map[string]string{"anthropic-ratelimit-unified-overage-status": "allowed", "anthropic-ratelimit-unified-overage-reset": weekly}
		}
		reply := testkit.Reply{Text: "ok", Headers: map[string]string{
			"anthropic-ratelimit-unified-status":               status,
			"anthropic-ratelimit-unified-reset":                reset,
			"anthropic-ratelimit-unified-5h-status":            status,
			"anthropic-ratelimit-unified-5h-reset":             reset,
			"anthropic-ratelimit-unified-5h-utilization":       fmt.Sprint(used),
			"anthropic-ratelimit-unified-7d-status":            "allowed",
			"anthropic-ratelimit-unified-7d-reset":             weekly,
			"anthropic-ratelimit-unified-7d-utilization":       "0.1",
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		}}
		maps.Copy(reply.Headers, extra)
		return reply
	}
	return testkit.Reply{Text: "ok"} // the environment's API key: no plan figures
}

// best is the profile a new conversation should get: the least used
// below the move threshold, the sooner reset breaking a tie.
func (p *plans) best() (name string, used float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, a := range p.by {
		if a.reported >= 0.95 {
			continue
		}
		if name == "" || a.reported < used || (a.reported == used && a.reset.Before(p.by[name].reset)) {
			name, used = n, a.reported
		}
	}
	return name, used
}

// still stops the figures moving: each account reports what it last did.
func (p *plans) still() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.by {
		a.used, a.step = a.reported, 0
	}
}

func (p *plans) set(name string, used, step float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.by[name].used, p.by[name].step = used, step
}

// tokenProfiles adds each plan as a token profile, and a wrapper that
// points their CLIs at the fake upstream (a token profile's CLI gets no
// base URL of its own: its token goes to Anthropic's API alone); flags
// are the add command's own.
func (p *plans) tokenProfiles(t *testing.T, g *gatewayProc, flags ...string) (wrapper string) {
	t.Helper()
	cli := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	for name, a := range p.by {
		if out, code := cli.run(a.token, append([]string{"add", name, "--kind", "token"}, flags...)...); code != 0 {
			t.Fatalf("add %s: %s", name, out)
		}
	}
	wrapper = filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\nexport ANTHROPIC_BASE_URL=" + g.up.URL + "\nexec " + testkit.ClaudePath(t) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// Three subscription profiles at 20 %, 70 % and 96 % of their 5-hour
// windows, as the upstream's rate-limit headers say and the CLI reports
// them: sixteen new conversations each go to the profile with the most
// room as the figures move, the answers saying why; their next turns stay
// on their profiles' live processes; the 96 % one gets none; and when one
// reaches 100 %, its conversations move with no error a client sees.
func TestAccountsByHeadroom(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	now := time.Now()
	accounts := &plans{by: map[string]*plan{
		"fresh": {token: "sk-ant-oat-fresh-SECRET", used: 0.2, step: 0.05, reset: now.Add(3 * time.Hour), reported: -1},
		"half":  {token: "sk-ant-oat-half-SECRET", used: 0.7, step: 0.05, reset: now.Add(2 * time.Hour), reported: -1},
		"full":  {token: "sk-ant-oat-full-SECRET", used: 0.96, step: 0, reset: now.Add(time.Hour), reported: -1},
	}}
	g.up.Respond(accounts.respond)
	wrapper := accounts.tokenProfiles(t, g)
	g.start("--claude-path", wrapper, "--spares", "0", "--max-live", "40", "--live-memory", "16000")

	type answer struct{ profile, reason string }
	send := func(conv string, history []sdk.MessageParam, header ...string) (answer, []sdk.MessageParam) {
		t.Helper()
		history = append(history, sdk.NewUserMessage(sdk.NewTextBlock("turn "+fmt.Sprint(len(history)/2+1)+" of "+conv)))
		opts := []option.RequestOption{}
		for i := 0; i+1 < len(header); i += 2 {
			opts = append(opts, option.WithHeader(header[i], header[i+1]))
		}
		var resp *http.Response
		msg, err := g.anthropic(conv).Messages.New(context.Background(), sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
			Messages: history}, append(opts, option.WithResponseInto(&resp))...)
		if err != nil {
			t.Fatalf("%s, turn %d: %v", conv, len(history)/2+1, err)
		}
		history = append(history, msg.ToParam())
		return answer{resp.Header.Get("X-Meridian-Profile"), resp.Header.Get("X-Meridian-Route-Reason")}, history
	}
	// Each profile's figures are known once it has answered a turn.
	for name := range accounts.by {
		if a, _ := send("warm-"+name, nil, "X-Meridian-Profile", name); a != (answer{name, "named"}) {
			t.Fatalf("a request naming %s: %+v", name, a)
		}
	}
	histories := map[string][]sdk.MessageParam{}
	on := map[string]string{} // conversation → profile
	counts := map[string]int{}
	const conversations = 16
	for i := range conversations {
		conv := fmt.Sprintf("conv-%02d", i)
		wantProfile, used := accounts.best()
		want := answer{wantProfile, fmt.Sprintf("headroom five_hour %d%%", int(math.Round(used*100)))}
		got, h := send(conv, nil)
		if got != want {
			t.Fatalf("new conversation %d: %+v, want %+v", i, got, want)
		}
		histories[conv], on[conv] = h, got.profile
		counts[got.profile]++
	}
	if counts["full"] != 0 || counts["fresh"] == 0 || counts["half"] == 0 {
		t.Fatalf("new conversations per profile: %v", counts)
	}
	// With the figures still, every next turn stays where it is.
	accounts.still()
	for conv, h := range histories {
		got, h := send(conv, h)
		if got != (answer{on[conv], "sticky"}) {
			t.Fatalf("%s's second turn: %+v, want %s, sticky", conv, got, on[conv])
		}
		histories[conv] = h
	}
	// fresh reaches 100 %: the next turn of each of its conversations moves.
	accounts.set("fresh", 1, 0)
	var pushed string
	for conv := range histories {
		if on[conv] == "fresh" && pushed == "" {
			pushed = conv
			if got, h := send(conv, histories[conv]); got != (answer{"fresh", "sticky"}) {
				t.Fatalf("the turn that reports 100 %%: %+v", got)
			} else {
				histories[conv] = h
			}
		}
	}
	moved := 0
	for conv, h := range histories {
		if on[conv] != "fresh" {
			continue
		}
		got, _ := send(conv, h)
		if got.profile == "fresh" || got.reason != "moved: five_hour 100%" {
			t.Fatalf("%s after fresh reached 100 %%: %+v", conv, got)
		}
		moved++
	}
	// The telemetry records say the same, and every sticky turn ran on
	// its conversation's live process.
	var page struct {
		Requests []struct {
			Profile string `json:"profile"`
			Route   string `json:"route"`
			Live    bool   `json:"live"`
			Status  int    `json:"status"`
		} `json:"requests"`
	}
	total := 3 + 2*conversations + 1 + moved
	if err := testkit.WaitFor(10*time.Second, func() error {
		g.getJSON("/telemetry/requests?limit=200", &page)
		if len(page.Requests) < total {
			return fmt.Errorf("%d records of %d", len(page.Requests), total)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	routes := map[string]int{}
	for _, r := range page.Requests {
		kind, _, _ := strings.Cut(r.Route, " ")
		routes[kind]++
		if r.Status != 200 || (kind == "sticky" && !r.Live) {
			t.Errorf("record %+v", r)
		}
	}
	if routes["headroom"] != conversations || routes["sticky"] != conversations+1 || routes["moved:"] != moved || routes["named"] != 3 {
		t.Fatalf("records by route: %v", routes)
	}
	if !g.logShows(`route="moved: five_hour 100%"`) {
		t.Error("the turn log does not give the route")
	}
	t.Logf("new conversations: %v; moved at 100 %%: %d", counts, moved)
}

// Two plan-only subscriptions. The upstream serves one from paid extra
// usage (the CLI reports it after the answer, too late to refuse that
// turn): from then on its figures say its plan is spent, so it takes no
// request, new or continuing, and the other answers; once the other's
// window is used up too, the answer is a 429 whose wait is the earliest
// reset.
func TestPlanOnlyNeverDrawsExtraUsage(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	now := time.Now()
	accounts := &plans{by: map[string]*plan{
		"first":  {token: "sk-ant-oat-first-SECRET", used: 1, reset: now.Add(30 * time.Minute), reported: -1, overage: true},
		"second": {token: "sk-ant-oat-second-SECRET", used: 0.4, reset: now.Add(50 * time.Minute), reported: -1},
	}}
	g.up.Respond(accounts.respond)
	wrapper := accounts.tokenProfiles(t, g, "--plan-only")
	cli := profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}
	if out, code := cli.run("", "default", "first"); code != 0 {
		t.Fatalf("default: %s", out)
	}
	g.start("--claude-path", wrapper, "--spares", "0")
	c := g.anthropic("plan-only-1")
	history := []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("a new conversation"))}
	var resp *http.Response
	msg, err := c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: history},
		option.WithResponseInto(&resp))
	if err != nil || resp.Header.Get("X-Meridian-Profile") != "first" {
		t.Fatalf("the first request, nothing known of either plan: %v %v", err, resp.Header)
	}
	if !g.logShows("the upstream served this turn from the account's paid extra usage") {
		t.Fatal("the log does not say first drew extra usage")
	}
	history = append(history, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("and on")))
	if _, err := c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: history},
		option.WithResponseInto(&resp)); err != nil || resp.Header.Get("X-Meridian-Profile") != "second" || resp.Header.Get("X-Meridian-Route-Reason") != "moved: benched" {
		t.Fatalf("its next turn: %v %v", err, resp.Header)
	}
	accounts.set("second", 1, 0) // this answer uses up second's window
	r, body, err := g.post(prompt("another new conversation"), "X-Claude-Code-Session-Id", "plan-only-2")
	if err != nil || r.StatusCode != 200 || r.Header.Get("X-Meridian-Profile") != "second" || r.Header.Get("X-Meridian-Route-Reason") != "headroom five_hour 40%" {
		t.Fatalf("a new conversation with first spent: %v %v %s", err, r.Header, body)
	}
	r, body, err = g.post(prompt("one more"), "X-Claude-Code-Session-Id", "plan-only-3")
	if err != nil || r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("with both plans spent: %v %v %s", err, r, body)
	}
	wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if left := int(time.Until(accounts.by["first"].reset).Seconds()); wait < left-5 || wait > left+3 {
		t.Fatalf("Retry-After %d, want first's reset in %d s: %s", wait, left, body)
	}
	if n := upstreamHad(g.up, "one more"); n != 0 {
		t.Fatalf("the refused request reached the upstream %d times", n)
	}
}

// Two hosts on one PostgreSQL: a 429 one host sees benches the profile on
// the other (which places a new conversation by the figures the first
// host saw), and `meridian profile unbench` on the first reopens it on
// the second within 2 s.
func TestAccountsAcrossHosts(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up := testkit.NewUpstream(t)
	now := time.Now()
	accounts := &plans{by: map[string]*plan{
		"x": {token: "sk-ant-oat-x-SECRET", used: 0.1, reset: now.Add(time.Hour), reported: -1},
		"y": {token: "sk-ant-oat-y-SECRET", used: 0.5, reset: now.Add(2 * time.Hour), reported: -1},
	}}
	var refusing atomic.Bool
	refusing.Store(true)
	var toX atomic.Int32
	reset := fmt.Sprint(now.Add(time.Hour).Unix())
	up.Respond(func(r testkit.Request) testkit.Reply {
		if r.Header.Get("Authorization") == "Bearer "+accounts.by["x"].token {
			toX.Add(1)
			if refusing.Load() {
				return testkit.Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error", ErrorMessage: "rate limited",
					Headers: map[string]string{
						"anthropic-ratelimit-unified-status":               "rejected",
						"anthropic-ratelimit-unified-reset":                reset,
						"anthropic-ratelimit-unified-5h-status":            "rejected",
						"anthropic-ratelimit-unified-5h-reset":             reset,
						"anthropic-ratelimit-unified-5h-utilization":       "1.0",
						"anthropic-ratelimit-unified-representative-claim": "five_hour",
					}}
			}
		}
		return accounts.respond(r)
	})
	hosts := []*gatewayProc{newHost(t, up), newHost(t, up)}
	sink := &hook{posts: map[string][]map[string]any{}, tries: map[string]int{}, refuse: map[string]int{}}
	receiver := httptest.NewServer(sink)
	t.Cleanup(receiver.Close)
	addSink := exec.Command(hosts[0].bin, "alert", "add", "ops", "--webhook", receiver.URL+"/ops", "--data-dir", hosts[0].dataDir, "--store", dsn)
	addSink.Env = hosts[0].env
	if out, code := combined(t, addSink); code != 0 {
		t.Fatalf("alert add: %s", out)
	}
	for i, h := range hosts {
		wrapper := accounts.tokenProfiles(t, h)
		if out, code := (profileCLI{t: t, bin: h.bin, dataDir: h.dataDir, env: h.env}).run("", "default", "x"); code != 0 {
			t.Fatalf("default: %s", out)
		}
		h.startOn(fmt.Sprintf("127.0.0.%d", i+2), dsn, "--claude-path", wrapper)
	}
	a, b := hosts[0], hosts[1]
	resp, body, err := a.post(prompt("first on a"), "X-Claude-Code-Session-Id", "across-1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "y" || resp.Header.Get("X-Meridian-Route-Reason") != "moved: benched" {
		t.Fatalf("on a, x refusing: %v %v %s", err, resp.Header, body)
	}
	refused := toX.Load()
	// b has run nothing: it knows x's bench and y's figures from a.
	resp, body, err = b.post(prompt("first on b"), "X-Claude-Code-Session-Id", "across-2")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "y" || resp.Header.Get("X-Meridian-Route-Reason") != "headroom five_hour 50%" {
		t.Fatalf("on b: %v %v %s", err, resp.Header, body)
	}
	if toX.Load() != refused {
		t.Fatal("b tried the profile a benched")
	}
	refusing.Store(false)
	unbench := exec.Command(a.bin, "profile", "unbench", "x", "--data-dir", a.dataDir)
	unbench.Env = append(a.env, "MERIDIAN_STORE="+dsn)
	if out, code := combined(t, unbench); code != 0 || !strings.Contains(out, "open again") {
		t.Fatalf("unbench: %d %s", code, out)
	}
	unbenched := time.Now()
	time.Sleep(1500 * time.Millisecond)
	resp, body, err = b.post(prompt("after the unbench"), "X-Claude-Code-Session-Id", "across-3", "X-Meridian-Profile", "x")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Meridian-Profile") != "x" {
		t.Fatalf("on b %s after the unbench: %v %v %s", time.Since(unbenched).Round(time.Millisecond), err, resp.Header, body)
	}
	// The operator heard of x's window at 100 %, its bench and its
	// return, once each (both hosts saw the bench end).
	kinds := func() []string {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		var out []string
		for _, p := range sink.posts["/ops"] {
			out = append(out, fmt.Sprint(p["kind"], " ", p["profile"]))
		}
		return out
	}
	if err := testkit.WaitFor(10*time.Second, func() error {
		if got := kinds(); !slices.Contains(got, "back x") {
			return fmt.Errorf("alerts %v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := kinds()
	slices.Sort(got)
	if !slices.Equal(got, []string{"back x", "benched x", "window x"}) {
		t.Fatalf("alerts %v: want x at 100 %%, benched, and back, once each", got)
	}
	// The admin routes the pages use: check reads the login and figures
	// now; an unknown profile is a 404 in the Anthropic shape.
	var checked struct {
		Profile string `json:"profile"`
		Auth    struct {
			LoggedIn bool `json:"logged_in"`
		} `json:"auth"`
		RateLimits []struct{ Type string } `json:"rate_limits"`
	}
	resp, body, err = b.postPath("/v1/profiles/x/check", "")
	if err != nil || resp.StatusCode != 200 || json.Unmarshal([]byte(body), &checked) != nil || checked.Profile != "x" || !checked.Auth.LoggedIn || len(checked.RateLimits) == 0 {
		t.Fatalf("check: %v %s", err, body)
	}
	if resp, body, _ = b.postPath("/v1/profiles/nobody/unbench", ""); resp.StatusCode != 404 || !strings.Contains(body, `"type":"not_found_error"`) {
		t.Fatalf("unbench of an unknown profile: %d %s", resp.StatusCode, body)
	}
}

// hook is a loopback webhook receiver that counts the alerts each sink
// path got, refusing the first refuse posts of a path.
type hook struct {
	mu     sync.Mutex
	posts  map[string][]map[string]any
	tries  map[string]int
	refuse map[string]int
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var v map[string]any
	_ = json.NewDecoder(r.Body).Decode(&v)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tries[r.URL.Path]++
	if h.refuse[r.URL.Path] > 0 {
		h.refuse[r.URL.Path]--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get("X-Meridian-Signature") == "" || r.Header.Get("X-Meridian-Timestamp") == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.posts[r.URL.Path] = append(h.posts[r.URL.Path], v)
}

func (h *hook) count(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.posts[path])
}

// Two hosts on one PostgreSQL both see a profile's 5-hour window at 85 %,
// then at 100 %: each sink gets one alert per crossing, in its format; a
// sink that refuses at first gets it on a later try, and one that is down
// holds up no request.
func TestAlertsOncePerCrossingAcrossHosts(t *testing.T) {
	t.Parallel()
	pg := testkit.PostgresServer(t)
	dsn := pg.NewDatabase(t)
	up := testkit.NewUpstream(t)
	accounts := &plans{by: map[string]*plan{"p": {token: "sk-ant-oat-p-SECRET", used: 0.85, reset: time.Now().Add(time.Hour), reported: -1}}}
	up.Respond(accounts.respond)
	h := &hook{posts: map[string][]map[string]any{}, tries: map[string]int{}, refuse: map[string]int{"/flaky": 2}}
	receiver := httptest.NewServer(h)
	t.Cleanup(receiver.Close)
	down := httptest.NewServer(h)
	downURL := down.URL
	down.Close() // nothing listens there
	hosts := []*gatewayProc{newHost(t, up), newHost(t, up)}
	alert := func(args ...string) string {
		cmd := exec.Command(hosts[0].bin, append(append([]string{"alert"}, args...), "--data-dir", hosts[0].dataDir, "--store", dsn)...)
		cmd.Env = hosts[0].env
		out, code := combined(t, cmd)
		if code != 0 {
			t.Fatalf("alert %v: %s", args, out)
		}
		return out
	}
	alert("add", "js", "--webhook", receiver.URL+"/js")
	alert("add", "sl", "--webhook", receiver.URL+"/sl", "--format", "slack")
	alert("add", "flaky", "--webhook", receiver.URL+"/flaky")
	alert("add", "down", "--webhook", downURL+"/down")
	for i, g := range hosts {
		wrapper := accounts.tokenProfiles(t, g)
		if out, code := (profileCLI{t: t, bin: g.bin, dataDir: g.dataDir, env: g.env}).run("", "default", "p"); code != 0 {
			t.Fatalf("default: %s", out)
		}
		g.startOn(fmt.Sprintf("127.0.0.%d", i+2), dsn, "--claude-path", wrapper)
	}
	turns := func(round string) {
		for i, g := range hosts {
			for j := range 2 {
				resp, body, err := g.post(prompt(fmt.Sprintf("%s %d %d", round, i, j)), "X-Claude-Code-Session-Id", fmt.Sprintf("%s-%d-%d", round, i, j))
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("%s on host %d: %v %s", round, i, err, body)
				}
			}
		}
	}
	wantEach := func(n int) {
		t.Helper()
		if err := testkit.WaitFor(20*time.Second, func() error {
			for _, p := range []string{"/js", "/sl", "/flaky"} {
				if h.count(p) < n {
					return fmt.Errorf("%s has %d alerts", p, h.count(p))
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // room for a duplicate that must not come
		for _, p := range []string{"/js", "/sl", "/flaky"} {
			if got := h.count(p); got != n {
				t.Fatalf("%s got %d alerts, want %d", p, got, n)
			}
		}
	}
	turns("at-85")
	wantEach(1)
	h.mu.Lock()
	first, slack, flakyTries := h.posts["/js"][0], h.posts["/sl"][0], h.tries["/flaky"]
	h.mu.Unlock()
	if first["kind"] != "window" || first["profile"] != "p" || first["window"] != "five_hour" || slack["text"] == nil || flakyTries != 3 {
		t.Fatalf("json %v, slack %v, flaky tried %d times", first, slack, flakyTries)
	}
	accounts.set("p", 1, 0)
	turns("at-100")
	wantEach(2)
	h.mu.Lock()
	second := h.posts["/js"][1]
	h.mu.Unlock()
	if msg, _ := second["message"].(string); !strings.Contains(msg, "100% used (alert at 100%)") {
		t.Fatalf("second alert %v", second)
	}
	if !hosts[0].logShows(`sink=down`) && !hosts[1].logShows(`sink=down`) {
		t.Fatal("no host tried the sink that is down")
	}
	if out := alert("list"); !strings.Contains(out, "js") || !strings.Contains(out, "alert at 100%") {
		t.Fatalf("alert list:\n%s", out)
	}
	// Either host's providers page lists both alerts, whichever host sent them.
	shown := page(t, hosts[1].url+"/providers")
	if strings.Count(shown, "window is ") != 2 || !strings.Contains(shown, "(alert at 80%)") {
		t.Fatalf("the providers page does not list the two alerts:\n%s", shown)
	}
}
