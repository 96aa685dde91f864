// Package panelwindow is the desktop companion's panel window: the
// platform's web view (WebKitGTK on Linux, built with cgo) showing the
// panel page Meridian serves, and nothing else. The rules of what the
// window may load are pure and tested here without a display; the web
// view itself runs in its own process (`meridian-desktop panel`), so the
// tray never loads a GUI toolkit and a closed panel frees its memory.
package panelwindow

import (
	"errors"
	"net/url"
)

// Action is what the window does with a navigation.
type Action int

// Actions.
const (
	// Deny: not loaded (another origin, a new window, a scheme that is
	// not the gateway's).
	Deny Action = iota
	// Allow: a page of the gateway's, loaded in the window.
	Allow
	// Copy: the panel's copy link; the window copies its text to the
	// clipboard instead of loading it.
	Copy
)

// CopyPath is the panel's copy link.
const CopyPath = "/panel/copy"

// Config is one panel window.
type Config struct {
	// Origin is the gateway's, scheme://host:port: the only one loaded.
	Origin string
	// Path is the page first shown (default /panel).
	Path string
	// Cookie is the session cookie the window signs in with (name=value;
	// empty for a gateway without an admin key).
	Cookie        string
	Title         string
	Width, Height int
}

// ExitNoWebView is meridian-panel's exit status in a build without a
// web view: the companion then opens the panel in the browser.
const ExitNoWebView = 3

// ErrNoWebView is Run's error in a build without the platform's web
// view: the companion opens the panel in the browser instead.
var ErrNoWebView = errors.New("this build of meridian-desktop has no web view (built without cgo or not for Linux)")

// Decide is the rule for one navigation to raw: only the gateway's own
// origin, in the window itself; the copy link copies. text is what to
// copy.
func Decide(origin, raw string, newWindow bool) (a Action, text string) {
	o, err := url.Parse(origin)
	if err != nil {
		return Deny, ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != o.Scheme || u.Host != o.Host || u.User != nil || newWindow {
		return Deny, ""
	}
	if u.Path == CopyPath {
		return Copy, u.Query().Get("text")
	}
	return Allow, ""
}
