package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// do sends a raw request and returns the response with its body read.
func do(t *testing.T, method, url, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func getJSON(t *testing.T, url string, header map[string]string, into any) *http.Response {
	t.Helper()
	resp, body := do(t, http.MethodGet, url, "", header)
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	return resp
}

// anthropicError checks a response is the Anthropic error envelope.
func anthropicError(t *testing.T, resp *http.Response, body []byte, status int, errType, mention string) {
	t.Helper()
	var env struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not JSON: %s", body)
	}
	if resp.StatusCode != status || env.Type != "error" || env.Error.Type != errType || !strings.Contains(env.Error.Message, mention) {
		t.Fatalf("got %d %s, want %d %s mentioning %q", resp.StatusCode, body, status, errType, mention)
	}
}

func TestBadRequestsGetClearErrors(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t) // never started: every request here is refused first
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, maxBodyBytes: 4096})
	cases := []struct {
		name, body     string
		status         int
		errType, field string
	}{
		{"malformed JSON", `{"model": "m", "messages": [`, 400, "invalid_request_error", "malformed JSON"},
		{"not an object", `[1,2]`, 400, "invalid_request_error", "JSON object"},
		{"empty body", ``, 400, "invalid_request_error", "empty"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "model: Field required"},
		{"model not a string", `{"model":3,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "model: expected a string"},
		{"missing messages", `{"model":"m"}`, 400, "invalid_request_error", "messages: Field required"},
		{"bad role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, 400, "invalid_request_error", "messages.0.role"},
		{"bad block", `{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, 400, "invalid_request_error", "messages.0.content.0.text: Field required"},
		{"stream not bool", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "stream: expected a boolean"},
		{"max_tokens zero", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens"},
		{"prefill", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}]}`, 400, "invalid_request_error", "prefill"},
		{"bad effort", `{"model":"m","output_config":{"effort":"extreme"},"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "output_config.effort"},
		{"too large", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "request_too_large", "exceeds 4096 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(t, http.MethodPost, s.URL+"/v1/messages", c.body, map[string]string{"Content-Type": "application/json"})
			anthropicError(t, resp, body, c.status, c.errType, c.field)
		})
	}
}

func TestUnknownRoutesAre404InAnthropicShape(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	resp, body := do(t, http.MethodGet, s.URL+"/v1/nothing-here", "", nil)
	anthropicError(t, resp, body, 404, "not_found_error", "/v1/nothing-here")
	resp, body = do(t, http.MethodGet, s.URL+"/v1/messages", "", nil)
	anthropicError(t, resp, body, 405, "invalid_request_error", "it takes POST")
	if allow := resp.Header.Get("Allow"); allow != "POST" {
		t.Errorf("405 without Allow: %q", allow)
	}
	// A near miss names the route meant.
	resp, body = do(t, http.MethodPost, s.URL+"/v1/message", "{}", nil)
	anthropicError(t, resp, body, 404, "not_found_error", "did you mean POST /v1/messages?")
}

// GET / names every API route, the Responses API's among them, and each
// route it names is served (a request to it never meets the router's own
// "not found").
func TestRootNamesEveryRoute(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	var info struct {
		Endpoints []string `json:"endpoints"`
	}
	if resp := getJSON(t, s.URL+"/", nil, &info); resp.StatusCode != 200 {
		t.Fatalf("GET / = %d", resp.StatusCode)
	}
	for _, want := range []string{"POST /v1/responses", "GET /v1/responses/{id}", "POST /v1/responses/{id}/cancel", "GET /v1/usage/quota"} {
		if !slices.Contains(info.Endpoints, want) {
			t.Errorf("GET / omits %s: %v", want, info.Endpoints)
		}
	}
	for _, e := range info.Endpoints {
		method, route, _ := strings.Cut(e, " ")
		route = strings.NewReplacer("{id}", "resp_x", "{key}", "k").Replace(route)
		resp, body := do(t, method, s.URL+route, "{}", map[string]string{"Content-Type": "application/json"})
		if strings.Contains(string(body), "not found: "+method) {
			t.Errorf("%s, named by GET /, is not served: %d %s", e, resp.StatusCode, body)
		}
	}
}

func TestRootAnswersGetAndHead(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	resp, _ := do(t, http.MethodHead, s.URL+"/", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("HEAD / = %d", resp.StatusCode)
	}
	var info struct {
		Service string `json:"service"`
	}
	if resp := getJSON(t, s.URL+"/", nil, &info); resp.StatusCode != 200 || info.Service != "meridian" {
		t.Fatalf("GET / = %d %+v", resp.StatusCode, info)
	}
	// A probe that asks for JSON first gets JSON, even listing HTML too.
	if resp := getJSON(t, s.URL+"/", map[string]string{"Accept": "application/json, text/html"}, &info); resp.StatusCode != 200 {
		t.Fatalf("GET / for JSON = %d", resp.StatusCode)
	}
	// A browser gets the landing page, self-contained.
	resp, body := do(t, http.MethodGet, s.URL+"/", "", map[string]string{"Accept": "text/html,application/xhtml+xml"})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), "Meridian is running") || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("GET / from a browser = %d %s\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// Its client hints are the setup commands, for the port it was reached at.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	for _, c := range []string{"claude-code", "opencode", "codex", "pi", "crush", "droid"} {
		if want := "meridian setup " + c + " --port " + port; !strings.Contains(string(body), want) {
			t.Errorf("the landing page lacks %q", want)
		}
	}
	if resp, css := do(t, http.MethodGet, s.URL+"/static/style.css", "", nil); resp.StatusCode != 200 || !strings.Contains(string(css), "prefers-color-scheme: dark") {
		t.Fatalf("the stylesheet: %d", resp.StatusCode)
	}
}

// With a key set, a browser's page needs it (the sign-in page answers
// 401), while the root's JSON and /health stay open for probes.
func TestPagesNeedTheKeyProbesDoNot(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, apiKey: "k1"})
	html := map[string]string{"Accept": "text/html"}
	for _, p := range []string{"/", "/telemetry", "/providers"} {
		resp, body := do(t, http.MethodGet, s.URL+p, "", html)
		if resp.StatusCode != 401 || !strings.Contains(string(body), "Sign in") || strings.Contains(string(body), "k1") {
			t.Errorf("GET %s without the key = %d %.200s", p, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, http.MethodGet, s.URL+"/", "", nil); resp.StatusCode != 200 {
		t.Errorf("the root's JSON needs the key: %d", resp.StatusCode)
	}
	// A key in the URL signs nothing in: history and access logs keep it.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, body := do(t, http.MethodGet, s.URL+"/providers?key=k1", "", html); resp.StatusCode != 401 || resp.Header.Get("Set-Cookie") != "" ||
		strings.Contains(string(body), "k1") {
		t.Fatalf("?key= in the URL: %d, cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	// The form posts the key: a cookie (a digest, not the key) and on to
	// the page asked for; a wrong key answers the form again.
	signIn := func(key, next string) *http.Response {
		t.Helper()
		resp, err := client.PostForm(s.URL+"/sign-in", url.Values{"key": {key}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := signIn("wrong", "/providers"); resp.StatusCode != 401 || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("a wrong key: %d, cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	resp := signIn("k1", "/providers?window=1h")
	cookie := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/providers?window=1h" ||
		!strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") || strings.Contains(cookie, "k1") {
		t.Fatalf("sign-in: %d to %q, cookie %q", resp.StatusCode, resp.Header.Get("Location"), cookie)
	}
	// The sign-in sends a browser only to a path on this server, never to
	// another host named by a path that begins with two slashes.
	for _, p := range []string{"//evil.example/", "/\\evil.example/", "///evil.example", "https://evil.example/"} {
		loc := signIn("k1", p).Header.Get("Location")
		if !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, "/\\") {
			t.Fatalf("sign-in going on to %q sends the browser to %q", p, loc)
		}
	}
	value := strings.SplitN(strings.SplitN(cookie, ";", 2)[0], "=", 2)[1]
	withCookie := map[string]string{"Accept": "text/html", "Cookie": "meridian_session=" + value}
	if resp, body := do(t, http.MethodGet, s.URL+"/providers", "", withCookie); resp.StatusCode != 200 || !strings.Contains(string(body), "Providers") {
		t.Fatalf("with the cookie: %d", resp.StatusCode)
	}
	// The cookie opens pages, not model requests.
	withCookie["Content-Type"] = "application/json"
	if resp, _ := do(t, http.MethodPost, s.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, withCookie); resp.StatusCode != 401 {
		t.Fatalf("a model request with the page cookie: %d", resp.StatusCode)
	}
}

func TestAPIKeyIsRequiredWhenSet(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{apiKey: "sekrit"})
	s.Upstream.Always(testkit.Reply{Text: "authorised", Usage: scriptedUsage})
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`

	resp, b := do(t, http.MethodPost, s.URL+"/v1/messages", body, nil)
	anthropicError(t, resp, b, 401, "authentication_error", "API key")
	// Every model route, with and without /v1, and the pages that show
	// what runs.
	for _, path := range []string{"/messages", "/chat/completions", "/v1/chat/completions", "/responses", "/v1/responses", "/inflight", "/metrics", "/telemetry/summary"} {
		method := http.MethodPost
		if path == "/inflight" || path == "/metrics" || path == "/telemetry/summary" {
			method = http.MethodGet
		}
		if resp, _ := do(t, method, s.URL+path, body, nil); resp.StatusCode != 401 {
			t.Errorf("%s %s without the key: %d", method, path, resp.StatusCode)
		}
	}
	resp, b = do(t, http.MethodPost, s.URL+"/v1/messages", body, map[string]string{"X-Api-Key": "wrong"})
	anthropicError(t, resp, b, 401, "authentication_error", "API key")
	resp, _ = do(t, http.MethodPost, s.URL+"/v1/messages", body, map[string]string{"Authorization": "Bearer sekrit"})
	if resp.StatusCode != 200 {
		t.Fatalf("bearer key: status %d", resp.StatusCode)
	}
	// The official SDK sends x-api-key.
	if err := newMessageWith(s, option.WithAPIKey("sekrit")); err != nil {
		t.Fatal(err)
	}
	// Health and the root stay open for probes.
	if resp, _ := do(t, http.MethodGet, s.URL+"/", "", nil); resp.StatusCode != 200 {
		t.Fatalf("GET / with a key set = %d", resp.StatusCode)
	}
}

func newMessageWith(s *stack, opts ...option.RequestOption) error {
	_, err := s.client(opts...).Messages.New(context.Background(), simpleParams("hi"))
	return err
}

func TestBrowserOriginsAndForeignHostsAreRefused(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	resp, body := do(t, http.MethodGet, s.URL+"/health", "", map[string]string{"Origin": "https://evil.example"})
	anthropicError(t, resp, body, 403, "permission_error", "evil.example")

	req, _ := http.NewRequest(http.MethodGet, s.URL+"/health", nil)
	req.Host = "rebound.example:3456"
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	anthropicError(t, r, b, 403, "permission_error", "rebound.example")

	if resp, _ := do(t, http.MethodGet, s.URL+"/", "", map[string]string{"Origin": "http://localhost:5173"}); resp.StatusCode != 200 {
		t.Fatalf("loopback origin refused: %d", resp.StatusCode)
	}
}

// Host names the operator allows (--allowed-hosts) are taken on a
// loopback listener, and their pages' origins too; others still are not.
func TestAllowedHostsAreTaken(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}, allowedHosts: []string{"meridian.internal"}})
	for host, want := range map[string]int{"meridian.internal:3456": 200, "MERIDIAN.internal.": 200, "rebound.example": 403} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/health", nil)
		req.Host = host
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Fatalf("host %s: %d, want %d", host, r.StatusCode, want)
		}
	}
	for origin, want := range map[string]int{"https://meridian.internal": 200, "https://evil.example": 403} {
		if resp, _ := do(t, http.MethodGet, s.URL+"/health", "", map[string]string{"Origin": origin}); resp.StatusCode != want {
			t.Fatalf("origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

func TestNonLoopbackNeedsAPIKey(t *testing.T) {
	t.Parallel()
	gw := gateway.New(gateway.Config{})
	defer gw.Close()
	models := httpapi.Models{Dispatch: dispatch.New(dispatch.Config{Default: gw})}
	if _, err := httpapi.New(httpapi.Config{Listen: httpapi.Listen{Addr: "0.0.0.0:3456"}, Models: models}); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("non-loopback without key: err = %v", err)
	}
	if _, err := httpapi.New(httpapi.Config{Listen: httpapi.Listen{Addr: "0.0.0.0:3456"}, Access: httpapi.Access{AdminKey: "k"}, Models: models}); err != nil {
		t.Fatalf("non-loopback with key: %v", err)
	}
	if _, err := httpapi.New(httpapi.Config{Listen: httpapi.Listen{Addr: "[::1]:3456"}, Models: models}); err != nil {
		t.Fatalf("IPv6 loopback: %v", err)
	}
}

func TestCountTokensIsAMarkedEstimate(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t)
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	n, err := s.client().Messages.CountTokens(context.Background(), countParams("a short question about nothing in particular"))
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens < 10 || n.InputTokens > 40 {
		t.Fatalf("estimate = %d", n.InputTokens)
	}
	resp, _ := do(t, http.MethodPost, s.URL+"/v1/messages/count_tokens",
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.Header.Get("X-Meridian-Token-Estimate") != "true" {
		t.Fatalf("count_tokens response is not marked as an estimate: %v", resp.Header)
	}
}

// Names a client chose are reflected only as bounded printable ASCII: a
// NUL byte or a 200 KB tool name never reaches a response header.
func TestIgnoredParamsHeaderIsBoundedAndClean(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	huge := strings.Repeat("x", 200<<10)
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[` +
		`{"type":"code_execution_20250522","name":"bad\u0000name\u00e9"},{"type":"code_execution_20250522","name":"` + huge + `"}]}`
	resp, out := do(t, http.MethodPost, s.URL+"/v1/messages", body, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	got := resp.Header.Get("X-Meridian-Ignored-Params")
	if len(got) > 1100 || !strings.HasPrefix(got, "tools: bad?name?? ") {
		t.Fatalf("header (%d bytes) = %.120q", len(got), got)
	}
	for _, c := range []byte(got) {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("header carries byte %#x: %.120q", c, got)
		}
	}
}

// A model name becomes a CLI argument: a NUL byte or a megabyte of it is
// a 400 naming the field, in either protocol, never a 500 with a path.
func TestBadModelNamesAre400(t *testing.T) {
	t.Parallel()
	path, scriptEnv := testkit.FakeClaude(t) // never started
	s := newStack(t, stackOptions{claudePath: path, env: []string{scriptEnv}})
	for _, model := range []string{`bad\u0000model`, strings.Repeat("m", 1<<20), `two words`} {
		resp, body := do(t, http.MethodPost, s.URL+"/v1/messages", `{"model":"`+model+`","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil)
		anthropicError(t, resp, body, 400, "invalid_request_error", "model:")
		resp, body = do(t, http.MethodPost, s.URL+"/v1/chat/completions", `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, nil)
		openAIError(t, resp, body, 400, "invalid_request_error", "model", "model:")
	}
	if pids := testkit.Processes(s.Marker); len(pids) > 0 {
		t.Fatalf("a refused request started claude: %v", pids)
	}
}

// A model the upstream does not know gets a 404 that says where the
// models are listed and names the one probably meant.
func TestAnUnknownModelPointsAtTheList(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	s.Upstream.Always(testkit.Reply{Status: 404, ErrorMessage: "model: claude-sonet-5-5"})
	// The hint waits at most 3 s for the CLI's model list; a loaded
	// machine may take longer to start the CLI that reads it, so the list
	// is read (and cached) first, as a client listing models would.
	if resp, body := do(t, http.MethodGet, s.URL+"/v1/models", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the model list: %d %s", resp.StatusCode, body)
	}
	resp, body := do(t, http.MethodPost, s.URL+"/v1/messages", `{"model":"claude-sonet-5-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"Content-Type": "application/json"})
	anthropicError(t, resp, body, 404, "not_found_error", "GET /v1/models lists the models this Meridian offers; did you mean claude-sonnet-5-5?")
}
