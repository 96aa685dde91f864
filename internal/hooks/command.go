package hooks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend/subproc"
)

// command runs a hook as a program: the envelope on its stdin, its reply
// on its stdout, in its own process group, killed at the bound and
// always joined.
type command struct {
	spec subproc.Spec
}

// passedEnv are the variables of meridian's environment a command gets;
// nothing else of it (keys, the store's address) reaches a hook.
var passedEnv = []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"}

func newCommand(s Spec, environ []string) (*command, error) {
	path, err := exec.LookPath(s.Command[0])
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", s.Command[0], err)
	}
	env := []string{"MERIDIAN_HOOK=" + s.Name, "MERIDIAN_HOOK_STAGE=" + s.Stage}
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); slices.Contains(passedEnv, k) {
			env = append(env, kv)
		}
	}
	env = append(env, s.Env...)
	return &command{spec: subproc.Spec{Path: path, Args: s.Command[1:], Env: env}}, nil
}

func (c *command) run(ctx context.Context, in []byte, max int) ([]byte, []byte, error) {
	out, stderr, err := subproc.Exchange(ctx, subproc.ExecLauncher{}, c.spec, in, max)
	if errors.Is(err, subproc.ErrOutputTooLarge) {
		err = errTooMuch
	}
	return out, stderr, err
}

func (c *command) close(context.Context) error { return nil }
