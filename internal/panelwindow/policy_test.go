package panelwindow

import "testing"

func TestDecide(t *testing.T) {
	const origin = "http://127.0.0.1:3456"
	for _, c := range []struct {
		uri       string
		newWindow bool
		want      Action
		text      string
	}{
		{"http://127.0.0.1:3456/panel", false, Allow, ""},
		{"http://127.0.0.1:3456/telemetry?tab=logs", false, Allow, ""},
		{"http://127.0.0.1:3456/panel/copy?text=meridian+setup+pi", false, Copy, "meridian setup pi"},
		{"http://127.0.0.1:3456/panel", true, Deny, ""},
		{"http://127.0.0.1:3457/panel", false, Deny, ""},
		{"http://localhost:3456/panel", false, Deny, ""},
		{"https://127.0.0.1:3456/panel", false, Deny, ""},
		{"http://user@127.0.0.1:3456/panel", false, Deny, ""},
		{"https://example.com/", false, Deny, ""},
		{"file:///etc/passwd", false, Deny, ""},
		{"javascript:alert(1)", false, Deny, ""},
		{"data:text/html,<p>x", false, Deny, ""},
		{"about:blank", false, Deny, ""},
		{"http://127.0.0.1:3456@evil.example/panel", false, Deny, ""},
	} {
		a, text := Decide(origin, c.uri, c.newWindow)
		if a != c.want || text != c.text {
			t.Errorf("%s (new window %v): %v %q, want %v %q", c.uri, c.newWindow, a, text, c.want, c.text)
		}
	}
}
