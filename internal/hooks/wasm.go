package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// module runs a hook as a WASI command module in process: the envelope on
// its stdin, its reply on its stdout, a fresh instance per run with no
// files, network, environment or real clock, its memory bounded, ended
// when its time is up.
type module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	args     []string
}

func newModule(ctx context.Context, s Spec, cacheDir string) (*module, error) {
	code, err := os.ReadFile(s.Wasm)
	if err != nil {
		return nil, fmt.Errorf("wasm module: %w", err)
	}
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(uint32(s.MemoryMiB) * 16)
	if cacheDir != "" {
		// Compiling a module takes a second or more; the cache makes
		// the next start's quick.
		if cache, err := wazero.NewCompilationCacheWithDir(cacheDir); err == nil {
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasi: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, code)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm module %s does not compile: %w", s.Wasm, err)
	}
	if _, ok := compiled.ExportedFunctions()["_start"]; !ok {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm module %s is not a WASI command (it exports no _start)", s.Wasm)
	}
	return &module{rt: rt, compiled: compiled, args: append([]string{s.Name}, s.Args...)}, nil
}

func (m *module) run(ctx context.Context, in []byte, max int) ([]byte, []byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Output past the bound ends the instance at once.
	out := &capped{max: max, over: func() { cancel(errTooMuch) }}
	stderr := &capped{max: 64 << 10}
	cfg := wazero.NewModuleConfig().WithName("").WithArgs(m.args...).
		WithStdin(bytes.NewReader(in)).WithStdout(out).WithStderr(stderr)
	inst, err := m.rt.InstantiateModule(ctx, m.compiled, cfg)
	if inst != nil {
		_ = inst.Close(context.WithoutCancel(ctx))
	}
	if errors.Is(context.Cause(ctx), errTooMuch) {
		return out.buf.Bytes(), stderr.buf.Bytes(), errTooMuch
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		err = nil
	}
	return out.buf.Bytes(), stderr.buf.Bytes(), err
}

func (m *module) close(ctx context.Context) error { return m.rt.Close(ctx) }

// capped keeps what is written up to max bytes; past that it fails the
// write and calls over once, or (over nil) drops the rest.
type capped struct {
	buf  bytes.Buffer
	max  int
	over func()
	done bool
}

func (c *capped) Write(b []byte) (int, error) {
	if c.buf.Len()+len(b) > c.max {
		if c.over == nil {
			return len(b), nil // stderr: the rest is not kept
		}
		n := c.max - c.buf.Len()
		c.buf.Write(b[:n])
		if !c.done && c.over != nil {
			c.done = true
			c.over()
		}
		return n, errTooMuch
	}
	return c.buf.Write(b)
}
