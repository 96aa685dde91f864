package alerts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

// AddSink records a webhook sink in the store every host reads and
// returns its signing secret, shown once.
func AddSink(ctx context.Context, st store.Alerts, name, url, format string, now time.Time) (secret string, err error) {
	if err := CheckURL(url); err != nil {
		return "", err
	}
	if format != FormatJSON && format != FormatSlack {
		return "", fmt.Errorf("--format %q: want %s or %s", format, FormatJSON, FormatSlack)
	}
	if name == "" || len(name) > 64 {
		return "", errors.New("an alert sink needs a name of 1 to 64 characters")
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	secret = "whsec_" + base64.RawURLEncoding.EncodeToString(b)
	err = st.AddSink(ctx, store.AlertSink{Name: name, URL: url, Format: format, Secret: secret, Created: now})
	if errors.Is(err, store.ErrConflict) {
		return "", fmt.Errorf("an alert sink named %s exists; remove it first", name)
	}
	return secret, err
}

// Sinks lists the sinks, their secrets left out, and the latest alerts
// sent.
func Sinks(ctx context.Context, st store.Alerts, recent int) (sinks []store.AlertSink, sent []store.SentAlert, err error) {
	if sinks, err = st.Sinks(ctx); err != nil {
		return nil, nil, err
	}
	for i := range sinks {
		sinks[i].Secret = ""
	}
	sent, err = st.Recent(ctx, recent)
	return sinks, sent, err
}

// RemoveSink deletes a sink.
func RemoveSink(ctx context.Context, st store.Alerts, name string) error {
	if err := st.RemoveSink(ctx, name); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no alert sink named %s", name)
	} else if err != nil {
		return err
	}
	return nil
}

// TestSink posts a test alert to one sink, once, and says how it went.
func TestSink(ctx context.Context, st store.Alerts, client *http.Client, name string, now time.Time) error {
	sinks, err := st.Sinks(ctx)
	if err != nil {
		return err
	}
	for _, s := range sinks {
		if s.Name == name {
			return Post(ctx, client, s, Alert{Kind: KindTest, At: now, Message: "a test alert from meridian: this sink works"}, now)
		}
	}
	return fmt.Errorf("no alert sink named %s", name)
}
