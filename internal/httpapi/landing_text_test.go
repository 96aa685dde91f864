package httpapi

import (
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/web"
)

// The text landing names a newer release when one is known, and nothing
// when none is.
func TestLandingTextNamesANewerRelease(t *testing.T) {
	if got := landingText("v1.0.0", "http://127.0.0.1:3456", web.Landing{Status: "ok", NewerRelease: "v9.1.0"}); !strings.Contains(got, "a newer release is out: v9.1.0") {
		t.Fatalf("%s", got)
	}
	if got := landingText("v1.0.0", "http://127.0.0.1:3456", web.Landing{Status: "ok"}); strings.Contains(got, "newer release") {
		t.Fatalf("%s", got)
	}
}
