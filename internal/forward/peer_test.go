package forward

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// Ask against a host alone: what it sends (the cluster key and this
// host, never another credential), the answer decoded, a refusal kept as
// the host's own status and message, and no cluster key no request.
func TestAsk(t *testing.T) {
	var got *http.Request
	var body []byte
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, must(io.ReadAll(r.Body))
		switch r.URL.Path {
		case "/v1/admin/profiles":
			_, _ = w.Write([]byte(`{"profiles":[{"name":"pro","kind":"login"}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(anthropic.AppendError(nil, anthropic.ErrNotFound, `no profile "gone"`, 0))
		}
	}))
	defer other.Close()
	f := New("cluster-secret", "host-a", nil, time.Second, nil)

	var answer struct {
		Profiles []struct{ Name string } `json:"profiles"`
	}
	if err := f.Ask(context.Background(), "host-b", other.URL+"/", http.MethodPost, "/v1/admin/profiles", map[string]string{"name": "pro"}, &answer); err != nil {
		t.Fatal(err)
	}
	if len(answer.Profiles) != 1 || answer.Profiles[0].Name != "pro" {
		t.Fatalf("answer: %+v", answer)
	}
	if got.Header.Get(HeaderClusterKey) != "cluster-secret" || got.Header.Get(HeaderForwardedBy) != "host-a" ||
		got.Header.Get("Content-Type") != "application/json" || got.Header.Get("X-Api-Key") != "" || got.Header.Get("Authorization") != "" {
		t.Fatalf("headers sent: %v", got.Header)
	}
	var sent map[string]string
	if json.Unmarshal(body, &sent) != nil || sent["name"] != "pro" {
		t.Fatalf("body sent: %s", body)
	}

	err := f.Ask(context.Background(), "host-b", other.URL, http.MethodDelete, "/v1/admin/profiles/gone", nil, nil)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Status != http.StatusNotFound || pe.Message != `no profile "gone"` || pe.Host != "host-b" {
		t.Fatalf("a refusal: %#v", err)
	}

	lone := New("", "host-a", nil, time.Second, nil)
	if err := lone.Ask(context.Background(), "host-b", other.URL, http.MethodGet, "/v1/admin/profiles", nil, nil); err == nil ||
		!strings.Contains(err.Error(), "cluster key") {
		t.Fatalf("without a cluster key: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
