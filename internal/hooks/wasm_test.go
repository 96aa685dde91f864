package hooks

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A WebAssembly hook runs in process: a transform that adds a header and
// changes the body; at its time bound one that never ends is stopped and
// fails its request with 504 within the bound; at its size bound an answer
// that just fits passes and a larger one is stopped at once with 502; a
// refusal keeps its status; a module that exits non-zero fails the
// request.
func TestWasmHookWithinItsBounds(t *testing.T) {
	t.Parallel()
	wasm := testkit.HookModule(t)
	ctx := context.Background()
	mod := func(name string, args ...string) Spec {
		return Spec{Name: name, Stage: StageRequest, Mode: ModeTransform, Wasm: wasm, Args: args, Timeout: 20 * time.Second, MaxBytes: 4096}
	}
	cache := t.TempDir() // each hook its own runtime, the module compiled once
	open := func(t *testing.T, s Spec) *Hooks { return openWith(t, Config{CacheDir: cache}, s) }
	h := open(t, mod("tag", "tag", "x-tagged", "wasm"))
	m, err := h.Run(ctx, StageRequest, request(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get("X-Tagged") != "wasm" || m.Header.Get("User-Agent") != "test" || m.Header.Get("X-Api-Key") != "sk-secret" ||
		string(m.Body) != `{"metadata":{"user_id":"tagged-by-wasm"},"model":"m"}` {
		t.Fatalf("after the module: %v %s", m.Header, m.Body)
	}

	spin := mod("spin", "spin")
	spin.Timeout = 500 * time.Millisecond
	start := time.Now()
	_, err = open(t, spin).Run(ctx, StageRequest, request(`{}`))
	hookError(t, err, http.StatusGatewayTimeout)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a module that never ends held its request %s", took)
	}

	// {"headers":{"x-pad":"…"}} is 24 bytes besides the padding.
	fits := open(t, mod("fits", "big", strconv.Itoa(4096-24)))
	if m, err := fits.Run(ctx, StageRequest, request(`{}`)); err != nil || len(m.Header.Get("X-Pad")) != 4096-24 {
		t.Fatalf("an answer of exactly max_bytes: %v", err)
	}
	_, err = open(t, mod("over", "big", strconv.Itoa(4096-23))).Run(ctx, StageRequest, request(`{}`))
	hookError(t, err, http.StatusBadGateway)

	_, err = open(t, mod("refuse", "refuse")).Run(ctx, StageRequest, request(`{}`))
	if he := hookError(t, err, http.StatusForbidden); he.Message != "not on Sundays" || !he.Refused() {
		t.Fatalf("refusal %+v", he)
	}
	_, err = open(t, mod("fail", "fail")).Run(ctx, StageRequest, request(`{}`))
	if he := hookError(t, err, http.StatusBadGateway); !strings.Contains(he.Message, "request hook fail failed") {
		t.Fatalf("failure %+v", he)
	}
}
