package desktop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/meridian-gw/meridian/internal/atomicfile"
)

// Autostart is where the companion's start-at-login entry lives: an XDG
// autostart entry on Linux desktops, a launch agent on macOS.
type Autostart struct {
	// Home and ConfigHome ($XDG_CONFIG_HOME; empty: ~/.config).
	Home, ConfigHome string
	GOOS             string
}

// Path is the entry's file.
func (a Autostart) Path() string {
	if a.goos() == "darwin" {
		return filepath.Join(a.Home, "Library", "LaunchAgents", "dev.meridian.desktop.plist")
	}
	base := a.ConfigHome
	if base == "" {
		base = filepath.Join(a.Home, ".config")
	}
	return filepath.Join(base, "autostart", "meridian-desktop.desktop")
}

func (a Autostart) goos() string {
	if a.GOOS != "" {
		return a.GOOS
	}
	return runtime.GOOS
}

// Install writes the entry starting argv (the companion's absolute path
// and its flags) at login.
func (a Autostart) Install(argv []string) error {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return fmt.Errorf("autostart needs the companion's absolute path, not %q", strings.Join(argv, " "))
	}
	var body string
	if a.goos() == "darwin" {
		var args strings.Builder
		for _, s := range argv {
			fmt.Fprintf(&args, "    <string>%s</string>\n", xmlEscape(s))
		}
		body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n" +
			"<plist version=\"1.0\">\n<dict>\n  <key>Label</key><string>dev.meridian.desktop</string>\n  <key>ProgramArguments</key>\n  <array>\n" +
			args.String() + "  </array>\n  <key>RunAtLoad</key><true/>\n</dict>\n</plist>\n"
	} else {
		quoted := make([]string, len(argv))
		for i, s := range argv {
			quoted[i] = desktopQuote(s)
		}
		body = "[Desktop Entry]\nType=Application\nName=Meridian\nComment=Shows what the Meridian gateway is doing\n" +
			"Exec=" + strings.Join(quoted, " ") + "\nTerminal=false\nX-GNOME-Autostart-enabled=true\n"
	}
	if err := os.MkdirAll(filepath.Dir(a.Path()), 0o755); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	if err := atomicfile.Write(a.Path(), []byte(body), 0o644); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	return nil
}

// Remove deletes the entry; none there is not an error.
func (a Autostart) Remove() error {
	if err := os.Remove(a.Path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("autostart: %w", err)
	}
	return nil
}

// desktopQuote quotes an Exec argument as the desktop entry spec asks:
// in double quotes, with ", `, $ and \ escaped, and % doubled.
func desktopQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\><~|&;$*?#()`%") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\\\`, `"`, `\\"`, "`", "\\\\`", `$`, `\\$`, `%`, `%%`)
	return `"` + r.Replace(s) + `"`
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
