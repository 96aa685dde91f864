package desktop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meridian-gw/meridian/internal/procgroup"

	"github.com/meridian-gw/meridian/internal/panelwindow"
)

// PanelProcess opens the panel window as a process of bin
// (meridian-panel): the session cookie goes on its stdin, never its
// arguments, which any user may read. Closing ctx closes the window; the
// process is always waited for. Without the binary, or one built without
// a web view, the panel opens in the browser.
func PanelProcess(bin string) func(ctx context.Context, origin, cookie string) error {
	return func(ctx context.Context, origin, cookie string) error {
		if bin == "" {
			return OpenURL(origin + "/panel")
		}
		cmd := exec.CommandContext(ctx, bin, "--origin", origin)
		cmd.Stdin = strings.NewReader(cookie + "\n")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 5 * time.Second
		// A companion killed outright takes its window with it.
		procgroup.DieWithParent(cmd, syscall.SIGTERM)
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &exit) && exit.ExitCode() == panelwindow.ExitNoWebView:
			return OpenURL(origin + "/panel")
		case err != nil:
			return fmt.Errorf("panel window: %w", err)
		}
		return nil
	}
}

// OpenURL opens a page in the person's browser (xdg-open, or macOS's
// open), and waits for the opener, which returns once it handed over.
func OpenURL(url string) error {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, opener, url).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w %s", opener, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// clipboard copies text with the first clipboard tool found (wl-copy on
// Wayland, xclip or xsel on X11, pbcopy on macOS), else with the panel's
// holder (`meridian-panel --copy`), which keeps the X11 selection until
// another program takes it or ten minutes pass. Each tool is waited for;
// the holder is joined by close (the companion's quit), which ends it.
type clipboard struct {
	holder string
	mu     sync.Mutex
	held   *exec.Cmd
	done   chan struct{}
}

func (c *clipboard) copy(text string) error {
	var tries [][]string
	if os.Getenv("WAYLAND_DISPLAY") != "" {
		tries = append(tries, []string{"wl-copy"})
	}
	tries = append(tries, []string{"xclip", "-selection", "clipboard"}, []string{"xsel", "--clipboard", "--input"}, []string{"pbcopy"})
	for _, t := range tries {
		if _, err := exec.LookPath(t[0]); err == nil {
			return pipe(t, text)
		}
	}
	if c.holder == "" {
		return fmt.Errorf("no clipboard tool found (wl-copy, xclip or xsel)")
	}
	c.close() // one holder at a time: the new text replaces the old
	cmd := exec.Command(c.holder, "--copy")
	cmd.Stdin = strings.NewReader(text)
	procgroup.DieWithParent(cmd, syscall.SIGTERM)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.mu.Lock()
	c.held, c.done = cmd, done
	c.mu.Unlock()
	return nil
}

// close ends the holder, if one runs, and waits for it.
func (c *clipboard) close() {
	c.mu.Lock()
	cmd, done := c.held, c.done
	c.held, c.done = nil, nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func pipe(argv []string, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(text)
	// No output is captured: xclip and its kind fork a holder of the
	// selection that keeps whatever output they had open.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", argv[0], err)
	}
	return nil
}
