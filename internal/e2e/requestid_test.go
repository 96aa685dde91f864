package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Every answer names its request (request-id, x-request-id), and every
// line meridian logs for that request carries the same id: the access
// line and the turn's own. An id the client sent, when safe, is kept; an
// unsafe one is replaced.
func TestRequestIDOnTheAnswerAndItsLogLines(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{})
	g.start()
	var resp *http.Response
	if _, err := g.client("ids").Messages.New(context.Background(), agyParams("hello"), option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("Request-Id")
	if !strings.HasPrefix(id, "req_") || resp.Header.Get("X-Request-Id") != id {
		t.Fatalf("request ids %q and %q", id, resp.Header.Get("X-Request-Id"))
	}
	// The access line is written once the answer is: it may follow it.
	var joined string
	if err := testkit.WaitFor(5*time.Second, func() error {
		var lines []string
		for line := range strings.SplitSeq(g.log.String(), "\n") {
			if strings.Contains(line, "request_id="+id) {
				lines = append(lines, line)
			}
		}
		joined = strings.Join(lines, "\n")
		if !strings.Contains(joined, `msg="turn done"`) || !strings.Contains(joined, "msg=request ") {
			return errors.New("not yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("the request's lines carrying its id:\n%s\nall:\n%s", joined, g.log.String())
	}
	for brought, kept := range map[string]bool{"client-trace-0001": true, "bad id; level=ERROR": false} {
		req, _ := http.NewRequest(http.MethodGet, g.url+"/v1/models", nil)
		req.Header.Set("X-Request-Id", brought)
		req.Header.Set("X-Api-Key", "client-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Request-Id"); (got == brought) != kept || got == "" {
			t.Fatalf("brought %q, answered %q", brought, got)
		}
	}
}
