package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/meridian-gw/meridian/internal/testkit"
)

const adminKey = "admin-SECRET-key"

// keyCommand runs `meridian key ARGS` on the gateway's data dir (and
// store, when given).
func (g *gatewayProc) keyCommand(t *testing.T, dsn string, args ...string) (string, int) {
	t.Helper()
	args = append(append([]string{"key"}, args...), "--data-dir", g.dataDir)
	if dsn != "" {
		args = append(args, "--store", dsn)
	}
	cmd := exec.Command(g.bin, args...)
	cmd.Env = g.env
	return combined(t, cmd)
}

// addKey makes a key and returns it.
func (g *gatewayProc) addKey(t *testing.T, dsn, name string, flags ...string) string {
	t.Helper()
	out, code := g.keyCommand(t, dsn, append([]string{"add", name, "--json"}, flags...)...)
	var v struct{ Key string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !strings.HasPrefix(v.Key, "mk-") {
		t.Fatalf("key add %s: %d %s", name, code, out)
	}
	return v.Key
}

func keyedAnthropic(url, key string) sdk.Client {
	return sdk.NewClient(option.WithBaseURL(url), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// apiStatus is the HTTP status of an SDK error (0: none).
func apiStatus(err error) (int, *http.Response) {
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return ae.StatusCode, ae.Response
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode, oe.Response
	}
	return 0, nil
}

func ask(c sdk.Client, model string, opts ...option.RequestOption) (*sdk.Message, error) {
	return c.Messages.New(context.Background(), sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: 100,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello"))}}, opts...)
}

func countTokens(c sdk.Client) error {
	_, err := c.Messages.CountTokens(context.Background(), sdk.MessageCountTokensParams{Model: "test-model",
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello"))}})
	return err
}

// A key made by `meridian key add` reaches only its scope: the profile it
// may use answers a request that names none (the default is another),
// naming another profile or a model outside its patterns is a 403 in the
// client's own shape that says what it may use, an unknown key is a 401,
// and the admin routes want the admin key. Revoked, it is refused within
// 2 s; rotated, the old key is refused and the new one works.
func TestKeysKeepToTheirScope(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "scoped answer"})
	twoProfiles(t, g, "sk-ant-a-SECRET", "sk-ant-b-SECRET")
	key := g.addKey(t, "", "ci-bot", "--profiles", "b", "--models", "test-*")
	g.env = append(g.env, "MERIDIAN_ADMIN_KEY="+adminKey)
	g.start("--spares", "0")

	c := keyedAnthropic(g.url, key)
	var resp *http.Response
	if msg, err := ask(c, "test-model", option.WithResponseInto(&resp)); err != nil || messageText(msg) != "scoped answer" {
		t.Fatalf("in scope: %v", err)
	}
	if p := resp.Header.Get("X-Meridian-Profile"); p != "b" {
		t.Fatalf("answered by profile %q; the key may use b only", p)
	}
	_, err := ask(c, "test-model", option.WithHeader("X-Meridian-Profile", "a"))
	if code, _ := apiStatus(err); code != http.StatusForbidden || !strings.Contains(errText(err), `may not use the profile "a"; it may use: b`) {
		t.Fatalf("another profile: %v", err)
	}
	_, err = ask(c, "claude-opus-4")
	if code, _ := apiStatus(err); code != http.StatusForbidden || !strings.Contains(errText(err), "permission_error") || !strings.Contains(errText(err), "test-*") {
		t.Fatalf("a model outside its patterns: %v", err)
	}
	oc := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey(key), oaioption.WithMaxRetries(0))
	_, err = oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusForbidden || !strings.Contains(oe.Message, `may not use the model "gpt-5"`) {
		t.Fatalf("chat completions outside its models: %v", err)
	}
	_, err = c.Messages.CountTokens(context.Background(), sdk.MessageCountTokensParams{Model: "claude-opus-4",
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hello"))}})
	if !isStatus(err, http.StatusForbidden) {
		t.Fatalf("count_tokens for a model outside its patterns: %v", err)
	}
	if _, err := ask(keyedAnthropic(g.url, "mk-NOTAKEY"), "test-model"); !isStatus(err, http.StatusUnauthorized) {
		t.Fatalf("an unknown key: %v", err)
	}
	if msg, err := ask(keyedAnthropic(g.url, adminKey), "test-model"); err != nil || messageText(msg) != "scoped answer" {
		t.Fatalf("the admin key: %v", err)
	}
	for key, want := range map[string]int{key: http.StatusForbidden, adminKey: http.StatusOK, "": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, g.url+"/telemetry/summary", nil)
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /telemetry/summary with key %.6q: %d, want %d", key, resp.StatusCode, want)
		}
	}

	// Rotated: the old key is refused, the new one answers.
	out, code := g.keyCommand(t, "", "rotate", "ci-bot", "--json")
	var rotated struct{ Key string }
	if code != 0 || json.Unmarshal([]byte(out), &rotated) != nil || rotated.Key == "" || rotated.Key == key {
		t.Fatalf("rotate: %d %s", code, out)
	}
	// The probe is a count_tokens, which the key check guards as it does
	// a turn: a turn still allowed would make the wait a CLI's start.
	waitTrue(t, 3*time.Second, "the old key refused after rotating", func() bool {
		return isStatus(countTokens(c), http.StatusUnauthorized)
	})
	if _, err := ask(c, "test-model"); !isStatus(err, http.StatusUnauthorized) {
		t.Fatalf("a turn with the old key after rotating: %v", err)
	}
	c = keyedAnthropic(g.url, rotated.Key)
	if _, err := ask(c, "test-model"); err != nil {
		t.Fatalf("the rotated key: %v", err)
	}

	// Revoked: refused within 2 s, saying so.
	if out, code := g.keyCommand(t, "", "revoke", "ci-bot"); code != 0 || !strings.Contains(out, "status:   revoked") {
		t.Fatalf("revoke: %d %s", code, out)
	}
	revoked := time.Now()
	waitTrue(t, 3*time.Second, "the revoked key refused", func() bool {
		err := countTokens(c)
		return isStatus(err, http.StatusUnauthorized) && strings.Contains(errText(err), `"ci-bot" was revoked`)
	})
	if took := time.Since(revoked); took > 2*time.Second {
		t.Fatalf("the revoked key was refused only after %s", took)
	}
	if _, err := ask(c, "test-model"); !isStatus(err, http.StatusUnauthorized) || !strings.Contains(errText(err), `"ci-bot" was revoked`) {
		t.Fatalf("a turn with the revoked key: %v", err)
	}
	out, _ = g.keyCommand(t, "", "list")
	if !strings.Contains(out, "ci-bot") || !strings.Contains(out, "revoked") || strings.Contains(out, rotated.Key) || strings.Contains(out, key) {
		t.Fatalf("key list: %s", out)
	}
}

// waitTrue waits for cond, failing the test with what when it never holds.
func waitTrue(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := testkit.WaitFor(within, func() error {
		if cond() {
			return nil
		}
		return errors.New("not yet")
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// errText is an error's text with the JSON quotes of its body unescaped.
func errText(err error) string { return strings.ReplaceAll(err.Error(), `\"`, `"`) }

func isStatus(err error, status int) bool {
	code, _ := apiStatus(err)
	return code == status
}

// A key's limits answer 429 with the key's own wait: the request over its
// rate is refused, not the one before it (Retry-After: until the oldest
// of the minute leaves it); a request past its running limit is refused
// while the others run; the answer that crosses its daily tokens finishes
// whole, streamed, and the next is refused until midnight UTC.
func TestKeyLimits(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		reply := testkit.Reply{Text: "counted answer", Usage: testkit.Usage{InputTokens: 30, OutputTokens: 40}}
		if strings.Contains(r.LastUserText(), "slow") {
			reply.Delay = 2 * time.Second
		}
		return reply
	})
	rate := g.addKey(t, "", "rate", "--rpm", "3")
	running := g.addKey(t, "", "running", "--concurrent", "2")
	budget := g.addKey(t, "", "budget", "--tokens-per-day", "50")
	g.start("--spares", "0")

	c := keyedAnthropic(g.url, rate)
	began := time.Now()
	for i := range 3 {
		if _, err := ask(c, "test-model"); err != nil {
			t.Fatalf("request %d of 3 a minute: %v", i+1, err)
		}
	}
	_, err := ask(c, "test-model")
	code, resp := apiStatus(err)
	if code != http.StatusTooManyRequests {
		t.Fatalf("the 4th request of 3 a minute: %v", err)
	}
	// The minute runs from the first request: the wait is what is left
	// of it, however long the three took on a loaded machine.
	left := int((time.Minute - time.Since(began)) / time.Second)
	if wait, _ := strconv.Atoi(resp.Header.Get("Retry-After")); wait < left-1 || wait > 60 || !strings.Contains(errText(err), "3 requests a minute") {
		t.Fatalf("Retry-After %q for the rate: %v", resp.Header.Get("Retry-After"), err)
	}

	slow := func(c sdk.Client) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100,
				Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("slow"))}})
			done <- err
		}()
		return done
	}
	c = keyedAnthropic(g.url, running)
	first, second := slow(c), slow(c)
	waitTrue(t, 20*time.Second, "two slow turns at the upstream", func() bool {
		n := 0
		for _, r := range g.up.Requests() {
			if r.LastUserText() == "slow" {
				n++
			}
		}
		return n >= 2
	})
	_, err = ask(c, "test-model")
	if code, resp := apiStatus(err); code != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(errText(err), "2 requests at once") {
		t.Fatalf("a third request while two run: %v", err)
	}
	for _, done := range []<-chan error{first, second} {
		if err := <-done; err != nil {
			t.Fatalf("a running request of the key: %v", err)
		}
	}
	if _, err := ask(c, "test-model"); err != nil {
		t.Fatalf("once they ended: %v", err)
	}

	c = keyedAnthropic(g.url, budget)
	stream := c.Messages.NewStreaming(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100,
		Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("stream it"))}})
	var msg sdk.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || messageText(&msg) != "counted answer" {
		t.Fatalf("the answer that crosses the budget: %q, %v", messageText(&msg), err)
	}
	waitTrue(t, 5*time.Second, "the budget's next request refused", func() bool {
		_, err := ask(c, "test-model")
		return isStatus(err, http.StatusTooManyRequests)
	})
	_, err = ask(c, "test-model")
	_, resp = apiStatus(err)
	midnight := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	if wait, _ := strconv.Atoi(resp.Header.Get("Retry-After")); absDuration(time.Duration(wait)*time.Second-time.Until(midnight)) > 5*time.Second ||
		!strings.Contains(errText(err), "50 tokens a day") {
		t.Fatalf("over the budget: Retry-After %q, %v", resp.Header.Get("Retry-After"), err)
	}

	// Usage is attributed to each key's name: /v1/usage/keys, /metrics
	// (per-key series, by the Prometheus parser) and the request records.
	var usage struct {
		Keys []struct {
			Name     string
			Status   string
			Requests int64
			Errors   int64
			Tokens   struct{ Input, Output int64 }
		}
	}
	got := map[string][3]int64{}
	// The records are written in batches, a moment after their answers.
	waitTrue(t, 5*time.Second, "the budget key's records written", func() bool {
		g.getJSON("/v1/usage/keys?window=1h", &usage)
		for _, k := range usage.Keys {
			got[k.Name] = [3]int64{k.Requests, k.Errors, k.Tokens.Output}
		}
		return got["budget"][0] >= 2
	})
	if r := got["rate"]; r[0] != 4 || r[1] != 1 || r[2] != 3*40 {
		t.Errorf("usage of key rate: %v (requests, errors, output tokens), want 4 requests, 1 refused, 120 output tokens; all: %+v", r, usage.Keys)
	}
	if r := got["running"]; r[0] < 4 || r[1] != 1 {
		t.Errorf("usage of key running: %v", r)
	}
	if r := got["budget"]; r[0] < 2 || r[2] < 40 {
		t.Errorf("usage of key budget: %v", r)
	}
	metrics := g.scrape(t)
	perKey := map[string]float64{}
	for _, m := range metrics["meridian_requests_total"].GetMetric() {
		perKey[metricLabel(m, "key")] += m.GetCounter().GetValue()
	}
	if perKey["rate"] != 4 || perKey["running"] < 4 || perKey["budget"] < 2 {
		t.Errorf("meridian_requests_total by key: %v", perKey)
	}
	tokens := map[string]float64{}
	for _, m := range metrics["meridian_tokens_total"].GetMetric() {
		if metricLabel(m, "kind") == "output" {
			tokens[metricLabel(m, "key")] += m.GetCounter().GetValue()
		}
	}
	if tokens["rate"] != 120 {
		t.Errorf("meridian_tokens_total{kind=output} by key: %v", tokens)
	}
	var records struct{ Requests []struct{ Key string } }
	g.getJSON("/telemetry/requests?key=budget", &records)
	if len(records.Requests) < 2 || records.Requests[0].Key != "budget" {
		t.Errorf("the request records of key budget: %+v", records)
	}

	// Each key sees its own figures, and only with itself.
	var own struct {
		Name string
		RPM  int
		Now  struct {
			RequestsLastMinute int   `json:"requests_last_minute"`
			TokensToday        int64 `json:"tokens_today"`
		}
		Usage struct{ Requests int64 }
	}
	req, _ := http.NewRequest(http.MethodGet, g.url+"/v1/usage/key", nil)
	req.Header.Set("Authorization", "Bearer "+rate)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&own) != nil {
		t.Fatalf("GET /v1/usage/key: %v %v", err, resp)
	}
	if own.Name != "rate" || own.RPM != 3 || own.Now.RequestsLastMinute != 3 || own.Now.TokensToday != 3*70 || own.Usage.Requests != 4 {
		t.Errorf("the rate key's own figures: %+v", own)
	}
	if resp, err := http.Get(g.url + "/v1/usage/key"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/usage/key without a key: %v %v", err, resp)
	}

	// No key anywhere: not in the log, the metrics, the usage or records.
	for _, where := range []string{g.log.String(), g.get(t, "/metrics"), g.get(t, "/v1/usage/keys"), g.get(t, "/telemetry/requests")} {
		for _, k := range []string{rate, running, budget} {
			if strings.Contains(where, k) || strings.Contains(where, strings.TrimPrefix(k, "mk-")) {
				t.Fatalf("a key shows in what meridian wrote: %.200s", where)
			}
		}
	}
}

// get returns the body of a GET (any status).
func (g *gatewayProc) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(g.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// scrape parses /metrics with the Prometheus text parser.
func (g *gatewayProc) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(g.get(t, "/metrics")))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return families
}

func metricLabel(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Two hosts on one PostgreSQL store keep one key's running limit between
// them: under a burst of 50 new conversations split across the hosts, the
// turns the upstream saw at once never outnumber the limit (each upstream
// call lies within its request's admission), the others are refused with
// the key's 1 s wait, and a revoked key is refused on both hosts within
// 2 s.
func TestKeyLimitsHoldAcrossHosts(t *testing.T) {
	t.Parallel()
	const limit, burst, delay = 3, 50, 300 * time.Millisecond
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	up := testkit.NewUpstream(t)
	var mu sync.Mutex
	var calls []time.Time
	up.Respond(func(testkit.Request) testkit.Reply {
		mu.Lock()
		calls = append(calls, time.Now())
		mu.Unlock()
		return testkit.Reply{Text: "shared answer", Delay: delay}
	})
	ips := []string{"127.0.0.2", "127.0.0.3"}
	hosts := []*gatewayProc{newHost(t, up), newHost(t, up)}
	key := hosts[0].addKey(t, dsn, "shared-bot", "--concurrent", strconv.Itoa(limit))
	for i, g := range hosts {
		g.env = append(g.env, "MERIDIAN_CLUSTER_KEY=test-cluster-SECRET")
		g.startOn(ips[i], dsn, "--max-live", "2")
	}

	var wg sync.WaitGroup
	var answered, refused, other atomic.Int32
	for i := range burst {
		time.Sleep(40 * time.Millisecond) // 50 over two seconds: slots free and fill again
		wg.Go(func() {
			c := sdk.NewClient(option.WithBaseURL(hosts[i%2].url), option.WithAPIKey(key), option.WithMaxRetries(0),
				option.WithHeader("X-Claude-Code-Session-Id", fmt.Sprint("burst-", i)))
			_, err := ask(c, "test-model")
			code, resp := apiStatus(err)
			switch {
			case err == nil:
				answered.Add(1)
			case code == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "1":
				refused.Add(1)
			default:
				other.Add(1)
				t.Errorf("request %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	most := mostAtOnce(calls, delay)
	mu.Unlock()
	t.Logf("%d answered, %d refused at the limit; at most %d upstream turns at once (limit %d)", answered.Load(), refused.Load(), most, limit)
	if most > limit || answered.Load() < limit || refused.Load() == 0 || other.Load() > 0 {
		t.Fatalf("%d answered, %d refused, %d other; %d at once at the upstream, over the limit of %d",
			answered.Load(), refused.Load(), other.Load(), most, limit)
	}

	if out, code := hosts[1].keyCommand(t, dsn, "revoke", "shared-bot"); code != 0 {
		t.Fatalf("revoke: %s", out)
	}
	refusedEverywhere(t, hosts, key, time.Now())
}

// refusedEverywhere waits for every host to refuse a key revoked at
// revoked with 401, failing when that took any host over 2 s.
func refusedEverywhere(t *testing.T, hosts []*gatewayProc, key string, revoked time.Time) {
	t.Helper()
	for _, g := range hosts {
		c := keyedAnthropic(g.url, key)
		waitTrue(t, 3*time.Second, "the revoked key refused on "+g.url, func() bool {
			return isStatus(countTokens(c), http.StatusUnauthorized)
		})
	}
	if took := time.Since(revoked); took > 2*time.Second {
		t.Fatalf("every host refused the revoked key only after %s", took)
	}
}

// mostAtOnce is the most intervals [start, start+d) that overlap.
func mostAtOnce(starts []time.Time, d time.Duration) int {
	most := 0
	for _, s := range starts {
		n := 0
		for _, o := range starts {
			if !o.After(s) && s.Before(o.Add(d)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// The dashboard, in headless Chromium after signing in with the admin
// key, groups the window's requests by key (the admin's apart) and links
// each key to its requests; the page shows no key, only names.
func TestDashboardGroupsByKey(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "ok", Usage: testkit.Usage{InputTokens: 11, OutputTokens: 7}})
	laptop := g.addKey(t, "", "laptop-codex")
	ci := g.addKey(t, "", "ci-bot")
	g.env = append(g.env, "MERIDIAN_ADMIN_KEY="+adminKey)
	g.start("--spares", "0")
	for key, n := range map[string]int{laptop: 3, ci: 1, adminKey: 2} {
		for range n {
			if _, err := ask(keyedAnthropic(g.url, key), "test-model"); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, adminKey), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`#card-requests`))
	b.forget() // the sign-in page's 401, as the browser logged it
	waitTrue(t, 5*time.Second, "the records written", func() bool {
		b.do(t, chromedp.Reload(), chromedp.WaitVisible(`#card-requests`))
		return text(t, b, "#card-requests .value") == "6"
	})
	rows := map[string]string{}
	for _, tr := range count(t, b, "#keys tbody tr") {
		name := get(t, b, chromedp.Text(chromedp.CSS("td:nth-child(1)"), chromedp.FromNode(tr)))
		rows[strings.TrimSpace(name)] = strings.TrimSpace(get(t, b, chromedp.Text(chromedp.CSS("td:nth-child(2)"), chromedp.FromNode(tr))))
	}
	if rows["laptop-codex"] != "3" || rows["ci-bot"] != "1" || rows["admin key or none"] != "2" {
		t.Fatalf("the by-key table: %v", rows)
	}
	b.screenshot(t, "telemetry-keys")
	html := get(t, b, chromedp.OuterHTML("html"))
	for _, k := range []string{laptop, ci, adminKey} {
		if strings.Contains(html, k) {
			t.Fatal("a key shows on the dashboard")
		}
	}
	b.do(t, chromedp.Click(`#keys a[href*="key=laptop-codex"]`))
	b.waitLocation(t, "key=laptop-codex")
	if n := len(count(t, b, "#requests tr.request")); n != 3 {
		t.Fatalf("the requests of laptop-codex: %d rows", n)
	}
	b.clean(t)
}

// A key's holder signs in with it to its own page, /key, which shows its
// limits and use; that sign-in opens no other page.
func TestAKeySeesItsOwnPage(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "ok", Usage: testkit.Usage{InputTokens: 11, OutputTokens: 7}})
	key := g.addKey(t, "", "pi-laptop", "--rpm", "60", "--tokens-per-day", "100000")
	g.env = append(g.env, "MERIDIAN_ADMIN_KEY="+adminKey)
	g.start("--spares", "0")
	for range 2 {
		if _, err := ask(keyedAnthropic(g.url, key), "test-model"); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	b.do(t, chromedp.Navigate(g.url+"/key"))
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, key), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`#card-rate`))
	b.forget() // the sign-in page's 401
	waitTrue(t, 5*time.Second, "the records written", func() bool {
		b.do(t, chromedp.Reload(), chromedp.WaitVisible(`#usage`))
		return text(t, b, "#usage-requests") == "2"
	})
	if h1, rate, tokens := text(t, b, "h1"), text(t, b, "#card-rate .sub"), text(t, b, "#card-tokens .value"); h1 != "Key pi-laptop" ||
		rate != "of 60 a minute" || tokens != "36" {
		t.Fatalf("the key's page: %q, %q, tokens today %q", h1, rate, tokens)
	}
	b.screenshot(t, "key")
	if html := get(t, b, chromedp.OuterHTML("html")); strings.Contains(html, key) {
		t.Fatal("the key shows on its page")
	}
	b.do(t, chromedp.Navigate(g.url+"/telemetry"))
	if title := text(t, b, "h1"); title != "Sign in" {
		t.Fatalf("a key's sign-in opened the dashboard: %q", title)
	}
	b.forget()
	b.clean(t)
}

// MERIDIAN_API_KEY is a client's key: a shell that exported it for a tool
// starts meridian without an admin key (the pages stay open on loopback,
// as for any start without one), and the log says which name the admin
// key has.
func TestAClientsKeyInTheEnvironmentIsNotTheAdminKey(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.env = append(g.env, "MERIDIAN_API_KEY=mk-client-SECRET")
	g.start("--spares", "0")
	resp, err := http.Get(g.url + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an admin route without a key: %d; the client's key became the admin key", resp.StatusCode)
	}
	if !strings.Contains(g.log.String(), "MERIDIAN_API_KEY is set here but is a client's key") || !strings.Contains(g.log.String(), "MERIDIAN_ADMIN_KEY") {
		t.Fatalf("the log does not say so:\n%s", g.log.String())
	}
}
