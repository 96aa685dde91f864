//go:build !(linux && cgo && webkit)

package panelwindow

// Run reports ErrNoWebView: this build has no web view.
func Run(Config) error { return ErrNoWebView }

// HoldClipboard reports ErrNoWebView: this build has no toolkit.
func HoldClipboard(string) error { return ErrNoWebView }
