package alerts

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// Formats a sink takes.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// Bounds of delivery: how many alerts may wait (more are dropped and
// logged, never waited for), how many times a post is tried and how long
// the first wait between tries is (it doubles), how long one post may
// take, and how long the record of a sent alert is kept (its crossing is
// not sent again meanwhile).
const (
	queueSize   = 64
	tries       = 5
	firstBackof = time.Second
	postTimeout = 10 * time.Second
	keepSent    = 30 * 24 * time.Hour
	// rememberKeys bounds the keys this host remembers claiming, so that
	// figures seen on every turn do not ask the store every time.
	rememberKeys = 1024
)

// Headers of a post: when it was signed, and the signature
// (sha256=HMAC-SHA256 of "timestamp.body" under the sink's secret).
const (
	HeaderTimestamp = "X-Meridian-Timestamp"
	HeaderSignature = "X-Meridian-Signature"
)

// Config configures a Notifier.
type Config struct {
	Store store.Alerts
	Host  string // this host's id, named in each alert
	// Thresholds are the shares of a window that raise an alert
	// (DefaultThresholds when nil).
	Thresholds []float64
	Client     *http.Client
	Logger     *slog.Logger
	Now        func() time.Time
	// Backoff is the first wait between tries (firstBackof when 0).
	Backoff time.Duration
}

// Notifier raises alerts: it claims each in the store (so one host sends
// it) and posts it to every sink, in the background.
type Notifier struct {
	cfg   Config
	queue chan Alert

	mu      sync.Mutex
	claimed map[string]bool // keys this host claimed or saw claimed
}

// New returns a Notifier; Run delivers what it raises.
func New(cfg Config) *Notifier {
	if cfg.Thresholds == nil {
		cfg.Thresholds = DefaultThresholds
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: postTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = firstBackof
	}
	return &Notifier{cfg: cfg, queue: make(chan Alert, queueSize), claimed: map[string]bool{}}
}

// Figures raises the alerts a profile's plan figures call for.
func (n *Notifier) Figures(profile string, f store.PlanFigures) {
	windows := make([]Window, len(f.Windows))
	for i, w := range f.Windows {
		windows[i] = Window{Name: w.Name, Used: w.Used, ResetsAt: w.ResetsAt, Overage: w.Overage}
	}
	for _, a := range Crossings(profile, windows, n.cfg.Thresholds, n.cfg.Now()) {
		n.Raise(a)
	}
}

// Bench raises the alert of a profile benched until a time.
func (n *Notifier) Bench(profile string, until time.Time) {
	n.Raise(Benched(profile, until, n.cfg.Now()))
}

// Reopened raises the alert of a profile whose bench has ended.
func (n *Notifier) Reopened(profile string, until time.Time) {
	n.Raise(Back(profile, until, n.cfg.Now()))
}

// LoggedOut raises the alert of a profile whose credentials were refused.
func (n *Notifier) LoggedOut(profile string) { n.Raise(LoggedOut(profile, n.cfg.Now())) }

// Raise queues an alert unless this host already claimed its key; with
// the queue full it is dropped and logged. It never waits.
func (n *Notifier) Raise(a Alert) {
	n.mu.Lock()
	seen := n.claimed[a.Key]
	n.mu.Unlock()
	if seen {
		return
	}
	select {
	case n.queue <- a:
	default:
		n.cfg.Logger.Warn("alerts: too many waiting; this one is dropped", "kind", a.Kind, "profile", a.Profile, "message", a.Message)
	}
}

// Run delivers alerts until ctx ends; the posts under way are given up
// then. It returns once nothing it started runs.
func (n *Notifier) Run(ctx context.Context) {
	var posts sync.WaitGroup
	defer posts.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-n.queue:
			if !n.claim(ctx, a) {
				continue
			}
			sinks, err := n.cfg.Store.Sinks(ctx)
			if err != nil {
				n.cfg.Logger.Warn("alerts: could not read the sinks; the alert is not sent", "message", a.Message, "err", err)
				continue
			}
			n.cfg.Logger.Info("alert", "kind", a.Kind, "profile", a.Profile, "message", a.Message, "sinks", len(sinks))
			for _, s := range sinks {
				posts.Go(func() { n.deliver(ctx, s, a) })
			}
		}
	}
}

// claim records the alert as sent, once for every host; false when
// another host (or this one) did already.
func (n *Notifier) claim(ctx context.Context, a Alert) bool {
	n.mu.Lock()
	if n.claimed[a.Key] {
		n.mu.Unlock()
		return false
	}
	n.mu.Unlock()
	a.Host = n.cfg.Host
	ok, err := n.cfg.Store.Claim(ctx, store.SentAlert{Key: a.Key, Kind: a.Kind, Profile: a.Profile, Message: a.Message, Host: a.Host, At: a.At}, keepSent)
	if err != nil {
		n.cfg.Logger.Warn("alerts: could not record an alert; it is tried again when seen again", "message", a.Message, "err", err)
		return false
	}
	n.mu.Lock()
	if len(n.claimed) >= rememberKeys {
		clear(n.claimed)
	}
	n.claimed[a.Key] = true
	n.mu.Unlock()
	return ok
}

// deliver posts an alert to a sink, trying again with a doubling wait up
// to tries times.
func (n *Notifier) deliver(ctx context.Context, s store.AlertSink, a Alert) {
	wait := n.cfg.Backoff
	for try := 1; ; try++ {
		err := Post(ctx, n.cfg.Client, s, a, n.cfg.Now())
		if err == nil {
			return
		}
		if try == tries || ctx.Err() != nil {
			n.cfg.Logger.Warn("alerts: a sink did not take an alert; given up", "sink", s.Name, "tries", try, "message", a.Message, "err", err)
			return
		}
		n.cfg.Logger.Info("alerts: a sink did not take an alert; trying again", "sink", s.Name, "try", try, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// Post sends one alert to one sink, signed; any answer but 2xx is an
// error.
func Post(ctx context.Context, client *http.Client, s store.AlertSink, a Alert, now time.Time) error {
	var body []byte
	var err error
	if s.Format == FormatSlack {
		body, err = json.Marshal(map[string]string{"text": a.Message})
	} else {
		body, err = json.Marshal(a)
	}
	if err != nil {
		return fmt.Errorf("alert: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alert sink %s: %w", s.Name, err)
	}
	stamp := strconv.FormatInt(now.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, stamp)
	req.Header.Set(HeaderSignature, "sha256="+Sign(s.Secret, stamp, body))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("alert sink %s: %w", s.Name, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("alert sink %s answered %s", s.Name, resp.Status)
	}
	return nil
}

// Sign is the hex HMAC-SHA256 of "timestamp.body" under secret: a receiver
// recomputes it to know the post came from this Meridian.
func Sign(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// CheckURL accepts a sink's address: HTTPS, or plain HTTP to this machine
// (loopback) only.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--webhook %q: not an absolute URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return errors.New("--webhook: plain http only to this machine (loopback); use https")
	}
	return fmt.Errorf("--webhook %q: want an https URL", raw)
}

// Sent is an alert as it was sent, for the pages.
type Sent struct {
	At                           time.Time
	Kind, Profile, Message, Host string
}

// Recent lists the latest alerts any host sent, newest first.
func (n *Notifier) Recent(ctx context.Context, limit int) ([]Sent, error) {
	recent, err := n.cfg.Store.Recent(ctx, limit)
	out := make([]Sent, len(recent))
	for i, a := range recent {
		out[i] = Sent{At: a.At, Kind: a.Kind, Profile: a.Profile, Message: a.Message, Host: a.Host}
	}
	return out, err
}
