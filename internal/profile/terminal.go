package profile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ReadSecret reads a token or key from in: a line typed at a terminal
// (prompted on prompt, not echoed), or everything piped in. A secret never
// comes from the command line, where other users' ps would show it.
func ReadSecret(in *os.File, prompt io.Writer, what string) (string, error) {
	restore, err := hideTyping(in)
	if errors.Is(err, errNotTerminal) {
		// Not a terminal: the secret is piped in.
		b, err := io.ReadAll(io.LimitReader(in, 64<<10))
		if err != nil {
			return "", fmt.Errorf("read the %s: %w", what, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	fmt.Fprintf(prompt, "Paste the %s, then Enter (it is not shown): ", what)
	defer func() {
		restore()
		fmt.Fprintln(prompt)
	}()
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the %s: %w", what, err)
	}
	return strings.TrimSpace(line), nil
}

// LoginCommand is the CLI's own login flow in a profile's config dir, to
// run attached to the user's terminal.
func (s *Store) LoginCommand(ctx context.Context, p Profile, claudePath string, base []string) (*exec.Cmd, error) {
	if p.Kind != Login {
		return nil, fmt.Errorf("profile %s is of kind %s: only a login profile logs in (add a token or key again instead)", p.Name, p.Kind)
	}
	env, err := s.Env(p, base)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, claudePath, "auth", "login")
	cmd.Env = env
	return cmd, nil
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return isTerminal(f) }

// TerminalWidth is the width in columns of the terminal f is, if it is one.
func TerminalWidth(f *os.File) (int, bool) { return terminalWidth(f) }

// errNotTerminal is hideTyping's answer for a file that is no terminal.
var errNotTerminal = errors.New("not a terminal")

// CodexLoginCommand is codex's own login in a codex profile's home: for
// codex-login its sign-in flow, to run attached to the user's terminal;
// for codex-api `codex login --with-api-key`, whose standard input the
// caller gives the key.
func (s *Store) CodexLoginCommand(ctx context.Context, p Profile, codexPath string, base []string) (*exec.Cmd, error) {
	args := []string{"login"}
	switch p.Kind {
	case CodexLogin:
	case CodexAPI:
		args = append(args, "--with-api-key")
	default:
		return nil, fmt.Errorf("profile %s is of kind %s, not a codex profile", p.Name, p.Kind)
	}
	env, err := s.Env(p, base)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, codexPath, args...)
	cmd.Env = env
	return cmd, nil
}
