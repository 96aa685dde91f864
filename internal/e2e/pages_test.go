package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// browser is a headless Chromium that records what the pages it shows do:
// console errors, exceptions, log entries and every URL requested.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	urls     []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(testkit.Chromium(t)), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				b.problems = append(b.problems, fmt.Sprintf("console %s", e.Type))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
				b.problems = append(b.problems, "log: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			b.urls = append(b.urls, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		call(ctx, network.Enable, network.EnableParams{}), call(ctx, cdplog.Enable, cdp.Empty{}), call(ctx, runtime.Enable, cdp.Empty{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func call[P any](ctx context.Context, cmd cdp.Command[P, cdp.Empty], params P) error {
	_, err := chromedp.Call(ctx, cmd, params)
	return err
}

// do runs actions in the page, failing the test on an error.
func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// get runs one action that returns a value.
func get[T any](t *testing.T, b *browser, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(t *testing.T, b *browser, css string) string {
	t.Helper()
	return get(t, b, chromedp.Text(chromedp.CSS(css)))
}

func count(t *testing.T, b *browser, css string) []*chromedp.Node {
	t.Helper()
	return get(t, b, chromedp.Nodes(chromedp.CSSAll(css), chromedp.AtLeast(0)))
}

// waitLocation waits until the page's address contains part: a form
// submitted, the next page has loaded.
func (b *browser) waitLocation(t *testing.T, part string) {
	t.Helper()
	err := testkit.WaitFor(10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		// Asked while the page navigates, the browser may answer that
		// the page it inspected is gone: the next look finds the new one.
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			return err
		}
		if !strings.Contains(loc, part) {
			return fmt.Errorf("still at %s", loc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.do(t, chromedp.WaitVisible(chromedp.CSS("main")))
}

// forget drops what the browser reported so far: a refusal the test asked
// for (a 401) is logged by the browser as a failed load.
func (b *browser) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = nil
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clean fails the test for any console error, exception or request that
// left loopback.
func (b *browser) clean(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("the page reported: %s", p)
	}
	for _, u := range b.urls {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "data" && !isLoopbackIP(pu.Hostname())) {
			t.Errorf("a page requested %s, which is not this meridian", u)
		}
	}
}

// screenshot saves the page, light and dark, under .artifacts/pages.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	dir := filepath.Join(testkit.RepoRoot(t), ".artifacts", "pages")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		if err := call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		png := get(t, b, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, name+"-"+scheme+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// servedTraffic starts meridian (with extra flags) and makes four model
// requests through the pinned CLI: a conversation's two turns (the second
// on its live process), a chat completion, and a refused request.
func servedTraffic(t *testing.T, key string, args ...string) *gatewayProc {
	t.Helper()
	g := newGateway(t)
	// Prices for the fake model, from the settings file as a user sets them.
	settings := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(settings, []byte("[pricing.\"test-model\"]\ninput = 3\noutput = 15\ncache_read = 0.3\ncache_write = 3.75\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.env = append(g.env, "MERIDIAN_CONFIG="+settings)
	g.up.Always(testkit.Reply{Text: "ok", Usage: testkit.Usage{InputTokens: 11, OutputTokens: 7, CacheReadInputTokens: 3, CacheCreationInputTokens: 5}})
	g.start(args...)
	auth := []string{"X-Api-Key", key, "X-Claude-Code-Session-Id", "pages-1"}
	first := prompt("first turn")
	if resp, body, err := g.post(first, auth...); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first turn: %v %s", err, body)
	}
	if resp, body, err := g.post(secondTurn("first turn"), auth...); err != nil || resp.StatusCode != 200 {
		t.Fatalf("second turn: %v %s", err, body)
	}
	chat, _ := http.NewRequest(http.MethodPost, g.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"test-model","messages":[{"role":"user","content":"hello"}]}`))
	chat.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(chat); err != nil || resp.StatusCode != 200 {
		t.Fatalf("chat: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	if resp, _, err := g.post(`{"model":"test-model","max_tokens":10,"messages":"nope"}`, auth...); err != nil || resp.StatusCode != 400 {
		t.Fatalf("refused request: %v %v", err, resp)
	}
	time.Sleep(700 * time.Millisecond) // the history writes in batches of at most 0.5 s
	return g
}

// The dashboard, the landing page and the providers page, loaded in a real
// browser after real requests, show those requests' figures, report no
// error and load nothing from beyond loopback.
func TestPagesInABrowser(t *testing.T) {
	g := servedTraffic(t, "client-key")
	b := newBrowser(t)

	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	requests, failed, clientErrs := text(t, b, "#card-requests .value"), text(t, b, "#card-errors .value"), text(t, b, "#client-errors")
	live, cost, costNote := text(t, b, "#card-live .value"), text(t, b, "#card-cost .value"), text(t, b, "#card-cost .sub")
	// Three answers of 11 input, 7 output, 3 cache-read and 5 cache-write
	// tokens at 3, 15, 0.30 and 3.75 dollars per million: $0.000473. The
	// refused request was the client's mistake, not a failure.
	if requests != "4" || failed != "0" || clientErrs != "1" || live != "100%" || cost != "$0.0005" || costNote != "estimate" {
		t.Errorf("overview cards: requests %q failed %q client errors %q live %q cost %q (%q)", requests, failed, clientErrs, live, cost, costNote)
	}
	if types := text(t, b, "#client-error-types"); !strings.Contains(types, "invalid_request_error") {
		t.Errorf("client errors by type: %q", types)
	}
	// Everything recorded is minutes old: the hour is shown, not a day
	// of empty slices.
	if on := text(t, b, ".windows a.on"); on != "1h" {
		t.Errorf("a fresh install's dashboard opens on the %s window, want 1h", on)
	}
	if bars := count(t, b, "#chart-requests svg rect"); len(bars) == 0 {
		t.Error("the requests chart drew no bars")
	}
	b.screenshot(t, "telemetry")

	b.do(t, chromedp.Navigate(g.url+"/telemetry?tab=requests"))
	if rows := count(t, b, "tr.request"); len(rows) != 4 {
		t.Errorf("the requests table shows %d rows, want 4", len(rows))
	}
	// The refused request says why, as its client was told.
	if detail := text(t, b, "tr.error-detail"); !strings.Contains(detail, "invalid_request_error") || !strings.Contains(detail, "messages") {
		t.Errorf("the refused request's row says %q", detail)
	}
	b.screenshot(t, "requests")
	// The filters, used as a user does: errors only.
	b.do(t, chromedp.SetValue(chromedp.CSS(`select[name="status"]`), "error"), chromedp.Click(chromedp.CSS(`form.filters button`)))
	b.waitLocation(t, "status=error")
	if rows := count(t, b, "tr.request"); len(rows) != 1 || rows[0].AttributeValue("data-status") != "400" {
		t.Errorf("status=error shows %d rows", len(rows))
	}
	// Continuations that missed the cache: none, the second turn read 3
	// tokens from it.
	b.do(t, chromedp.Navigate(g.url+"/telemetry?tab=requests&missed_cache=1"), chromedp.WaitVisible(chromedp.CSS(`#requests`)))
	if rows := count(t, b, "tr.request"); len(rows) != 0 {
		_, body := testkit.Get(t, g.url+"/telemetry/requests")
		t.Errorf("missed_cache shows %d rows, want none; the records:\n%s", len(rows), body)
	}

	b.do(t, chromedp.Navigate(g.url+"/telemetry?tab=logs"))
	if logs := text(t, b, "#logs"); !strings.Contains(logs, "meridian listening") {
		t.Errorf("the logs tab lacks the start line: %.300s", logs)
	}

	b.do(t, chromedp.Navigate(g.url+"/"))
	if today, cli := text(t, b, "#today .value"), text(t, b, "#cli .value"); today != "4" || cli != testkit.ClaudeVersion(t) {
		t.Errorf("landing: requests today %q, CLI %q", today, cli)
	}
	b.screenshot(t, "landing")

	b.do(t, chromedp.Navigate(g.url+"/providers"))
	if provider := text(t, b, ".provider .cli"); !strings.Contains(provider, testkit.ClaudeVersion(t)) {
		t.Errorf("providers page: %q", provider)
	}
	b.screenshot(t, "providers")

	// /key is in the navigation, and its form says what this Meridian
	// (no admin key, no key made yet) takes.
	b.do(t, chromedp.Click(chromedp.CSS(`nav a[href="/key"]`)))
	b.waitLocation(t, "/key")
	if form := text(t, b, "#sign-in"); !strings.Contains(form, "meridian key add") || !strings.Contains(form, "started without an admin key") ||
		!strings.Contains(form, "No key is in force") {
		t.Errorf("the /key form says %q", form)
	}
	b.forget() // /key answered its form with 401, which the browser logs

	b.fits(t, 1280, g.url+"/", g.url+"/telemetry", g.url+"/telemetry?tab=requests", g.url+"/telemetry?tab=logs", g.url+"/providers", g.url+"/cluster")
	b.fits(t, 420, g.url+"/", g.url+"/providers", g.url+"/key")
	b.forget() // /key's 401 again
	b.do(t, chromedp.Navigate(g.url+"/cluster"))
	b.screenshot(t, "cluster")
	b.clean(t)
}

// With --admin-key the pages refuse a browser without the key and show the
// sign-in form, which posts the key (a wrong one is said so, a key in the
// URL signs nothing in) and goes on to the page asked for with a cookie;
// a page request from a foreign origin is refused.
func TestPagesNeedTheKey(t *testing.T) {
	g := servedTraffic(t, "sekrit-key", "--admin-key", "sekrit-key")
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	if title := text(t, b, "h1"); title != "Sign in" {
		t.Fatalf("without the key the dashboard showed %q", title)
	}
	b.do(t, chromedp.Navigate(g.url+"/telemetry?key=sekrit-key"))
	if title := text(t, b, "h1"); title != "Sign in" {
		t.Fatalf("a key in the URL showed %q", title)
	}
	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, "wrong"), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`p.refused`))
	if title, form := text(t, b, "h1"), text(t, b, "#sign-in"); title != "Sign in" || !strings.Contains(form, "started with an admin key") {
		t.Fatalf("a wrong key showed %q: %q", title, form)
	}
	b.screenshot(t, "sign-in")
	b.forget() // the refusals above, as the browser logged them
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, "sekrit-key"), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`#card-requests`))
	if requests, location := text(t, b, "#card-requests .value"), get(t, b, chromedp.Location()); requests != "4" || strings.Contains(location, "key") ||
		!strings.HasSuffix(location, "/telemetry") {
		t.Fatalf("after signing in: requests %q at %s", requests, location)
	}
	b.do(t, chromedp.Navigate(g.url+"/providers"))
	if title := text(t, b, "h1"); title != "Providers" {
		t.Fatalf("the cookie did not carry to another page: %q", title)
	}
	// The cookie is for pages: a model request still needs the key.
	if resp, _, err := g.post(prompt("no key"), "X-Api-Key", ""); err != nil || resp.StatusCode != 401 {
		t.Fatalf("a model request without the key: %v %v", err, resp)
	}
	req, _ := http.NewRequest(http.MethodGet, g.url+"/telemetry/summary", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("X-Api-Key", "sekrit-key")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Fatalf("a foreign origin: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	b.clean(t)
}

// clipped lists what does not fit the page's width: the page itself
// scrolling sideways, a table wider than its panel, a card's text wider
// than its card.
const clipped = `(() => {
	const out = [], de = document.documentElement;
	if (de.scrollWidth > window.innerWidth) out.push("the page is " + de.scrollWidth + " px wide in a " + window.innerWidth + " px window");
	for (const el of document.querySelectorAll(".scroll, .card, .panel, header, form")) {
		if (el.scrollWidth > el.clientWidth + 1) out.push((el.id || el.className || el.tagName) + " holds " + el.scrollWidth + " px in " + el.clientWidth);
	}
	return out;
})()`

// fits loads each page at width px and fails the test for anything clipped.
func (b *browser) fits(t *testing.T, width int64, urls ...string) {
	t.Helper()
	b.do(t, chromedp.EmulateViewport(width, 900))
	for _, u := range urls {
		b.do(t, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("main")))
		for _, c := range get(t, b, chromedp.Evaluate[[]string](clipped)) {
			t.Errorf("%s at %d px: %s", u, width, c)
		}
	}
	b.do(t, chromedp.EmulateViewport(1280, 1000))
}
