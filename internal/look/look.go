// Package look takes one look at a running gateway for the desktop
// companion: its health and drain (GET /health), each profile's status,
// plan windows and live processes, and the alerts it sent (GET
// /providers/status, with the key the companion holds). It is an HTTP
// client only; what the tray makes of it is package glance's.
package look

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/glance"
)

// UserAgent names the companion's looks: the gateway logs them at debug
// level, or a companion looking every few seconds would fill its log.
const UserAgent = "meridian-desktop"

// maxAnswer bounds what is read of one answer.
const maxAnswer = 4 << 20

// Looker looks at the gateway at URL with Key (the admin key, or none
// for an open gateway).
type Looker struct {
	URL, Key string
	Client   *http.Client
}

// Look reads the gateway now. A gateway that does not answer is a
// reading with Reached false, not an error; an error is an answer that
// could not be read (a key refused, a shape not understood).
func (l *Looker) Look(ctx context.Context) (glance.Reading, []glance.Alert, error) {
	var health struct {
		Status   string `json:"status"`
		Draining bool   `json:"draining"`
		Paused   bool   `json:"paused"`
	}
	reached, err := l.get(ctx, "/health", &health)
	if !reached {
		return glance.Reading{}, nil, nil
	}
	if err != nil {
		return glance.Reading{}, nil, err
	}
	r := glance.Reading{Reached: true, Health: health.Status, Draining: health.Draining || health.Paused}
	var status struct {
		Providers []struct {
			Profile    string `json:"profile"`
			Status     string `json:"status"`
			RateLimits []struct {
				Type        string    `json:"type"`
				Utilization float64   `json:"utilization"`
				ResetsAt    time.Time `json:"resets_at"`
			} `json:"rate_limits"`
			Processes struct {
				Live   int `json:"live_processes"`
				Spares int `json:"spare_processes"`
			} `json:"processes"`
		} `json:"providers"`
		Alerts []struct {
			At      time.Time
			Kind    string
			Profile string
			Message string
		} `json:"alerts"`
	}
	if _, err := l.get(ctx, "/providers/status", &status); err != nil {
		return r, nil, err
	}
	for _, p := range status.Providers {
		gp := glance.Profile{Name: p.Profile, Status: p.Status}
		for _, w := range p.RateLimits {
			gp.Windows = append(gp.Windows, glance.Window{Type: w.Type, Utilization: w.Utilization, ResetsAt: w.ResetsAt})
		}
		r.Profiles = append(r.Profiles, gp)
		r.Live += p.Processes.Live - p.Processes.Spares
	}
	// The default profile, where the gateway has a console to say it.
	var listed struct {
		Profiles []struct {
			Name    string `json:"name"`
			Default bool   `json:"default"`
		} `json:"profiles"`
	}
	if _, err := l.get(ctx, "/v1/admin/profiles", &listed); err == nil {
		for _, p := range listed.Profiles {
			if p.Default {
				r.Default = p.Name
			}
		}
	}
	alerts := make([]glance.Alert, 0, len(status.Alerts))
	for _, a := range status.Alerts {
		alerts = append(alerts, glance.Alert{Kind: a.Kind, Profile: a.Profile, Message: a.Message, At: a.At})
	}
	return r, alerts, nil
}

// get reads path's JSON into v; reached says the gateway answered at all.
func (l *Looker) get(ctx context.Context, path string, v any) (reached bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(l.URL, "/")+path, nil)
	if err != nil {
		return false, fmt.Errorf("look at %s: %w", l.URL, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	if l.Key != "" {
		req.Header.Set("X-Api-Key", l.Key)
	}
	client := l.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return true, fmt.Errorf("GET %s: %w", path, err)
	}
	// /health answers 503 while the gateway is unavailable, with its body.
	if resp.StatusCode != http.StatusOK && !(path == "/health" && resp.StatusCode == http.StatusServiceUnavailable) {
		return true, fmt.Errorf("GET %s: %d (does the companion hold this gateway's admin key?)", path, resp.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return true, fmt.Errorf("GET %s: %w", path, err)
	}
	return true, nil
}
