package hooks

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

func request(body string) Message {
	return Message{API: "messages", Method: http.MethodPost, Path: "/v1/messages", Key: "alice",
		Header: http.Header{"User-Agent": {"test"}, "X-Api-Key": {"sk-secret"}}, Body: []byte(body)}
}

func open(t *testing.T, specs ...Spec) *Hooks { return openWith(t, Config{}, specs...) }

func openWith(t *testing.T, cfg Config, specs ...Spec) *Hooks {
	t.Helper()
	cfg.Specs, cfg.Environ = specs, os.Environ()
	h, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// sh is a command hook running a shell script.
func sh(name, stage, mode, script string) Spec {
	return Spec{Name: name, Stage: stage, Mode: mode, Command: []string{"sh", "-c", script}}
}

func hookError(t *testing.T, err error, status int) *Error {
	t.Helper()
	var he *Error
	if !errors.As(err, &he) || he.Status != status {
		t.Fatalf("err %v, want a hook error with status %d", err, status)
	}
	return he
}

// A transform that adds a header: it gets the envelope (never the key),
// and what it answers is what goes on; at its time bound a slower run of
// the same hook fails with 504 within the bound, and at its size bound the
// request that just fits passes and the one a byte larger is refused with
// 413 before the hook runs.
func TestTransformAddsAHeaderWithinItsBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	script := `cat > ` + seen + `; sleep "${DELAY:-0}"; printf '{"headers":{"user-agent":"test","x-tagged":"yes"}}'`
	spec := sh("tag", StageRequest, ModeTransform, script)
	spec.Timeout, spec.MaxBytes = 1500*time.Millisecond, 600
	h := open(t, spec)
	m, err := h.Run(context.Background(), StageRequest, request(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("X-Tagged") != "yes" || m.Header.Get("X-Api-Key") != "sk-secret" || string(m.Body) != `{"model":"m"}` {
		t.Fatalf("after the hook: %v %s", m.Header, m.Body)
	}
	in, _ := os.ReadFile(seen)
	for _, want := range []string{`"stage":"request"`, `"api":"messages"`, `"key":"alice"`, `"user-agent":"test"`, `"body":{"model":"m"}`} {
		if !strings.Contains(string(in), want) {
			t.Errorf("the hook read %s, without %s", in, want)
		}
	}
	if strings.Contains(string(in), "sk-secret") {
		t.Errorf("the hook read the API key: %s", in)
	}

	// Time: a run that takes most of its bound passes; one that would
	// take longer is cut at the bound.
	slow := spec
	slow.Name, slow.Env = "slow", []string{"DELAY=0.8"}
	if _, err := open(t, slow).Run(context.Background(), StageRequest, request(`{}`)); err != nil {
		t.Fatalf("a run inside its bound: %v", err)
	}
	hung := spec
	hung.Name, hung.Env, hung.Timeout = "hung", []string{"DELAY=600"}, 300*time.Millisecond
	start := time.Now()
	_, err = open(t, hung).Run(context.Background(), StageRequest, request(`{}`))
	he := hookError(t, err, http.StatusGatewayTimeout)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a hanging hook held its request %s", took)
	}
	if !strings.Contains(he.Message, "request hook hung did not finish within 300ms") {
		t.Fatalf("message %q", he.Message)
	}

	// Size: the envelope of the largest body that fits.
	fits := request(`{"p":"` + strings.Repeat("x", 400) + `"}`)
	in, _ = encode(&h.request[0].Spec, StageRequest, fits)
	pad := spec.MaxBytes - len(in)
	fits.Body = []byte(`{"p":"` + strings.Repeat("x", 400+pad) + `"}`)
	if _, err := h.Run(context.Background(), StageRequest, fits); err != nil {
		t.Fatalf("an envelope of exactly max_bytes: %v", err)
	}
	over := fits
	over.Body = []byte(`{"p":"` + strings.Repeat("x", 401+pad) + `"}`)
	he = hookError(t, func() error { _, err := h.Run(context.Background(), StageRequest, over); return err }(), http.StatusRequestEntityTooLarge)
	if !strings.Contains(he.Message, "max_bytes 600") {
		t.Fatalf("message %q", he.Message)
	}
}

// An observer that counts: it runs once per request and what it prints
// changes nothing; at its time bound a slow observer fails its request
// (closed), and at its size bound a larger request is refused.
func TestObserverCountsWithinItsBounds(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "count")
	spec := sh("count", StageRequest, ModeObserve, `cat >/dev/null; echo seen >> `+count+`; sleep "${DELAY:-0}"; echo '{"body":{"changed":true}}'`)
	spec.Timeout, spec.MaxBytes = time.Second, 1000
	h := open(t, spec)
	for range 5 {
		m, err := h.Run(context.Background(), StageRequest, request(`{"model":"m"}`))
		if err != nil || string(m.Body) != `{"model":"m"}` {
			t.Fatalf("%s %v", m.Body, err)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "seen") != 5 {
		t.Fatalf("counted %q", b)
	}
	slow := spec
	slow.Name, slow.Env, slow.Timeout = "slow-count", []string{"DELAY=600"}, 200*time.Millisecond
	_, err := open(t, slow).Run(context.Background(), StageRequest, request(`{}`))
	hookError(t, err, http.StatusGatewayTimeout)
	_, err = h.Run(context.Background(), StageRequest, request(`{"p":"`+strings.Repeat("x", 1000)+`"}`))
	hookError(t, err, http.StatusRequestEntityTooLarge)
	if b, _ := os.ReadFile(count); strings.Count(string(b), "seen") != 6 {
		t.Fatalf("the observer ran for a request over its bound: %q", b)
	}
}

// A hook's output is bounded: past max_bytes it is killed at once (not
// waited for to its timeout) and its request fails with 502; a hook that
// exits non-zero, or answers what is not a reply, fails it too; one that
// refuses gives its status and message.
func TestHookOutputAndFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script string
		status       int
		message      string
	}{
		{"flood", `cat >/dev/null; yes '{"headers":{}}'`, 502, "request hook flood failed"},
		{"exit", `cat >/dev/null; echo 'details /home/x' >&2; exit 3`, 502, "request hook exit failed"},
		{"junk", `cat >/dev/null; echo 'not json'`, 502, "request hook junk failed"},
		{"secret", `cat >/dev/null; echo '{"headers":{"authorization":"Bearer x"}}'`, 502, "request hook secret failed"},
		{"refuse", `cat >/dev/null; echo '{"error":{"status":429,"message":"over the team quota"}}'`, 429, "over the team quota"},
	} {
		spec := sh(c.name, StageRequest, ModeTransform, c.script)
		spec.Timeout, spec.MaxBytes = 30*time.Second, 4096
		start := time.Now()
		_, err := open(t, spec).Run(context.Background(), StageRequest, request(`{}`))
		he := hookError(t, err, c.status)
		if he.Message != c.message && !strings.HasPrefix(he.Message, c.message) || strings.Contains(he.Message, "/home") {
			t.Errorf("%s: message %q", c.name, he.Message)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: took %s; a flood is cut at its bound", c.name, took)
		}
	}
}

// What a command hook started is ended with it: a hook that leaves a
// child behind and hangs is killed with its child at the bound.
func TestHangingHookIsKilledWithItsChildren(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := sh("leaver", StageRequest, ModeObserve, `sleep 600 & echo $! > `+pidFile+`; cat >/dev/null; wait`)
	spec.Timeout = 300 * time.Millisecond
	_, err := open(t, spec).Run(context.Background(), StageRequest, request(`{}`))
	hookError(t, err, http.StatusGatewayTimeout)
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("the hook wrote no pid")
	}
	if err := testkit.WaitFor(5*time.Second, func() error {
		if testkit.Alive(pid) {
			return errors.New("the hook's child still runs")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A client that leaves ends its hooks' runs with its own error, not a
// hook's.
func TestClientLeavingIsNotAHookFailure(t *testing.T) {
	t.Parallel()
	h := open(t, sh("wait", StageRequest, ModeObserve, `cat >/dev/null; sleep 600`))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := h.Run(ctx, StageRequest, request(`{}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

// Streamed answers reach their observers after they end, in the
// background, and Close waits for them; transforms do not see them.
func TestStreamObserversRunAfterAndAreJoined(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen, transformed := filepath.Join(dir, "seen"), filepath.Join(dir, "transformed")
	h := open(t,
		sh("watch", StageAnswer, ModeObserve, `sleep 0.2; cat > `+seen),
		sh("change", StageAnswer, ModeTransform, `cat > `+transformed))
	h.Observe(context.Background(), Message{API: "messages", Status: 200, Stream: true, Body: []byte("event: message_stop\ndata: {}\n\n")})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(seen)
	if !strings.Contains(string(b), `"stream":true`) || !strings.Contains(string(b), `"body":"event: message_stop\ndata: {}\n\n"`) {
		t.Fatalf("the observer read %s", b)
	}
	if _, err := os.Stat(transformed); err == nil {
		t.Fatal("a transform ran on a stream")
	}
}

func TestSpecsAreChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Name: "a", Stage: "before"}, `stage "before"`},
		{Spec{Name: "a", Stage: StageRequest, Mode: "rewrite", Command: []string{"true"}}, `mode "rewrite"`},
		{Spec{Name: "a", Stage: StageRequest}, "a command or a wasm module"},
		{Spec{Name: "a", Stage: StageRequest, Command: []string{"true"}, Wasm: "x.wasm"}, "a command or a wasm module"},
		{Spec{Name: "a", Stage: StageRequest, Command: []string{"true"}, APIs: []string{"embeddings"}}, `api "embeddings"`},
		{Spec{Name: "a", Stage: StageRequest, Command: []string{"true"}, Timeout: 2 * time.Minute}, "timeout 2m0s"},
		{Spec{Name: "a", Stage: StageRequest, Command: []string{"no-such-hook-command"}}, "no-such-hook-command"},
		{Spec{Name: "a b", Stage: StageRequest, Command: []string{"true"}}, "a name"},
	} {
		_, err := Open(context.Background(), Config{Specs: []Spec{c.spec}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.spec, err, c.want)
		}
	}
	dup := sh("same", StageRequest, "", "true")
	if _, err := Open(context.Background(), Config{Specs: []Spec{dup, dup}}); err == nil || !strings.Contains(err.Error(), "two hooks") {
		t.Fatalf("duplicate names: %v", err)
	}
}

// A reply names only what it changes: a header set, one removed (null),
// the rest kept, hidden ones neither seen nor settable.
func TestReplyChangesOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	m := request(`{"a":1}`)
	m.Header.Set("X-Drop", "1")
	got, err := apply("h", []byte(`{"headers":{"x-new":"v","x-drop":null},"body":{"a":2}}`), m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Get("X-New") != "v" || got.Header.Get("X-Drop") != "" || got.Header.Get("User-Agent") != "test" ||
		got.Header.Get("X-Api-Key") != "sk-secret" || string(got.Body) != `{"a":2}` || m.Header.Get("X-Drop") != "1" {
		t.Fatalf("after the reply: %v %s (before: %v)", got.Header, got.Body, m.Header)
	}
	for _, bad := range []string{`{"headers":{"x-api-key":"k"}}`, `{"headers":{"x":"a\nb"}}`, `{"body":[1]}`, `{"bdy":{}}`, `{} {}`,
		`{"error":{"status":200}}`} {
		if _, err := apply("h", []byte(bad), m); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
	if got, err := apply("h", nil, m); err != nil || string(got.Body) != `{"a":1}` {
		t.Fatalf("an empty reply changed %s: %v", got.Body, err)
	}
}
