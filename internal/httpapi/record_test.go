package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/metrics"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// A client that hangs up once it has its whole answer, while the handler
// still works (Codex closes on response.completed as the response is
// stored), was answered: 200. One that hangs up before was not: 499.
func TestAClientGoneAfterItsAnswerWasAnswered(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered bool
		want      string
	}{
		{"after the answer", true, "200"},
		{"before the answer", false, "499"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New(nil)
			s, err := New(Config{Listen: Listen{Addr: "127.0.0.1:0"}, Telemetry: Telemetry{Metrics: m}, Models: noModels()})
			if err != nil {
				t.Fatal(err)
			}
			s.handler = s.track(s.logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte("data: the answer\n\n"))
				_ = http.NewResponseController(w).Flush()
				if tc.delivered {
					telemetry.From(r.Context()).Delivered()
				}
				<-r.Context().Done() // the handler is still at work when the client leaves
			})))
			base, cancel, done := serving(t, s)
			defer func() {
				cancel()
				<-done
			}()
			conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
			rd := bufio.NewReader(conn)
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, "the answer") {
					break
				}
			}
			conn.Close()
			err = testkit.WaitFor(10*time.Second, func() error {
				rec := httptest.NewRecorder()
				m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				for _, line := range strings.Split(rec.Body.String(), "\n") {
					if strings.HasPrefix(line, "meridian_requests_total{") {
						if !strings.Contains(line, `status="`+tc.want+`"`) {
							return fmt.Errorf("recorded %s, want status %s", line, tc.want)
						}
						return nil
					}
				}
				return fmt.Errorf("no request recorded yet")
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
