// Package crashreport sends, when the operator opts in (--crash-dsn), a
// report of each panic to a Sentry-protocol receiver (Sentry itself, a
// GlitchTip server): the panic's kind, its stack and Meridian's version,
// never a prompt, a key or a local path (see event.go). Reports are sent
// in the background, the same panic at most once an hour and at most one
// report a minute, each bounded in time.
package crashreport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Bounds: how often one panic is reported, how often any is, how long a
// send may take.
const (
	samePanicEvery = time.Hour
	anyPanicEvery  = time.Minute
	sendTimeout    = 10 * time.Second
)

// Reporter sends crash reports to one DSN. A nil Reporter sends nothing.
type Reporter struct {
	endpoint, auth, version string
	client                  *http.Client
	log                     *slog.Logger

	mu   sync.Mutex
	sent map[string]time.Time // by stack signature
	last time.Time
	wg   sync.WaitGroup
}

// New parses a DSN (scheme://public_key@host[:port][/path]/project_id).
// "" is no reporter.
func New(dsn, version string, log *slog.Logger) (*Reporter, error) {
	if dsn == "" {
		return nil, nil
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User == nil || u.User.Username() == "" || u.Host == "" {
		return nil, fmt.Errorf("--crash-dsn: want scheme://public_key@host/project_id (a Sentry or GlitchTip DSN)")
	}
	dir, project := "", strings.Trim(u.Path, "/")
	if i := strings.LastIndex(project, "/"); i >= 0 {
		dir, project = "/"+project[:i], project[i+1:]
	}
	if project == "" {
		return nil, fmt.Errorf("--crash-dsn names no project id")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reporter{
		endpoint: u.Scheme + "://" + u.Host + dir + "/api/" + project + "/envelope/",
		auth:     "Sentry sentry_version=7, sentry_client=meridian/" + version + ", sentry_key=" + u.User.Username(),
		version:  version, log: log, sent: map[string]time.Time{},
		client: &http.Client{Timeout: sendTimeout},
	}, nil
}

// Panic reports a recovered panic's value and stack (debug.Stack()), in
// the background.
func (r *Reporter) Panic(v any, stack []byte) {
	if r == nil {
		return
	}
	typ, value := describe(v)
	fs := frames(stack)
	sig := typ + "|" + value
	for _, f := range fs {
		sig += "|" + f.Function
	}
	now := time.Now()
	r.mu.Lock()
	if t, ok := r.sent[sig]; (ok && now.Sub(t) < samePanicEvery) || now.Sub(r.last) < anyPanicEvery {
		r.mu.Unlock()
		r.log.Info("crash report not sent: one was sent a moment ago", "panic", typ)
		return
	}
	r.sent[sig], r.last = now, now
	r.mu.Unlock()
	r.wg.Go(func() { r.send(typ, value, fs, now) })
}

// Close waits for the reports being sent.
func (r *Reporter) Close() {
	if r != nil {
		r.wg.Wait()
	}
}

func (r *Reporter) send(typ, value string, fs []Frame, at time.Time) {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	eventID := hex.EncodeToString(id)
	event, _ := json.Marshal(map[string]any{
		"event_id": eventID, "timestamp": float64(at.UnixMilli()) / 1000, "platform": "go", "level": "fatal",
		"release": "meridian@" + r.version, "logger": "meridian",
		"tags":      map[string]string{"os": runtime.GOOS, "arch": runtime.GOARCH, "go": runtime.Version()},
		"exception": map[string]any{"values": []any{map[string]any{"type": typ, "value": value, "stacktrace": map[string]any{"frames": fs}}}},
	})
	var body bytes.Buffer
	header, _ := json.Marshal(map[string]string{"event_id": eventID, "sent_at": at.UTC().Format(time.RFC3339)})
	item, _ := json.Marshal(map[string]any{"type": "event", "length": len(event)})
	body.Write(header)
	body.WriteByte('\n')
	body.Write(item)
	body.WriteByte('\n')
	body.Write(event)
	body.WriteByte('\n')
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint, &body)
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-sentry-envelope")
	req.Header.Set("X-Sentry-Auth", r.auth)
	resp, err := r.client.Do(req)
	if err != nil {
		r.log.Warn("crash report not sent", "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		r.log.Warn("crash report refused", "status", resp.Status)
		return
	}
	r.log.Info("crash report sent", "event_id", eventID)
}
