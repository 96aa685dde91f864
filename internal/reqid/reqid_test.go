package reqid_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/reqid"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// The ids know nothing of the gateway.
func TestImportsFlowDownward(t *testing.T) { testkit.CheckImports(t) }

// A line logged with a request's context carries its id, through loggers
// derived with attributes and groups; one without, none. An id brought
// by a request is kept only when safe.
func TestRequestIDOnLogLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(reqid.Handler{Handler: slog.NewTextHandler(&buf, nil)}).With("component", "gateway").WithGroup("g")
	ctx := reqid.With(context.Background(), "req_abc12345")
	log.InfoContext(ctx, "turn done", "x", 1)
	log.Info("unrelated")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "request_id=req_abc12345") || strings.Contains(lines[1], "request_id") {
		t.Fatalf("%q", lines)
	}
	for brought, kept := range map[string]bool{"req_abc12345": true, "0f3a-1b2c-ffff": true, "short": false,
		"evil\nlevel=ERROR": false, strings.Repeat("a", 81): false, "": false} {
		if got := reqid.Take(brought); (got == brought) != kept || !strings.HasPrefix(got, "req_") && !kept {
			t.Errorf("Take(%q) = %q", brought, got)
		}
	}
}
