package hooks

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// What a hook costs a request, side by side: a transform as a command
// (sh, fork and exec each run) and as a WebAssembly module (a fresh
// instance each run, in process), on a 20 KB request.
func BenchmarkHookRun(b *testing.B) {
	wasm := testkit.HookModule(b)
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 20000) + `"}]}`
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"command", Spec{Name: "cmd", Stage: StageRequest, Mode: ModeTransform, Command: []string{"sh", "-c", `cat >/dev/null; echo '{"headers":{"x-tag":"1"}}'`}}},
		{"wasm", Spec{Name: "mod", Stage: StageRequest, Mode: ModeTransform, Wasm: wasm, Args: []string{"tag", "x-tag", "1"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.spec.Timeout = 30 * time.Second
			h, err := Open(context.Background(), Config{Specs: []Spec{c.spec}, CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close(context.Background())
			for b.Loop() {
				if _, err := h.Run(context.Background(), StageRequest, request(body)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
