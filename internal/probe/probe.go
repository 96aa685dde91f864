// Package probe asks whatever listens on an address whether it is Meridian
// and what it reports: `meridian status` prints it, and `meridian serve`
// says who holds a port it cannot take. It is an HTTP client only.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// ErrNothing means nothing listens on the address.
var ErrNothing = errors.New("nothing is listening")

// Report is what an instance says about itself.
type Report struct {
	URL      string `json:"url"`
	Meridian bool   `json:"meridian"`
	Version  string `json:"version,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Holder describes a server that is not Meridian (its status and
	// Server header).
	Holder string `json:"holder,omitempty"`

	Health    *Health   `json:"health,omitempty"`
	Today     *Today    `json:"today,omitempty"`
	Problems  []string  `json:"problems,omitempty"` // what could not be read (a key needed, …)
	CheckedAt time.Time `json:"checked_at"`
}

// Health is the part of GET /health that status shows.
type Health struct {
	Status string `json:"status"`
	// The CLI, under its name: claude, or agy for Antigravity.
	Claude    *CLIHealth `json:"claude,omitempty"`
	Agy       *CLIHealth `json:"agy,omitempty"`
	Codex     *CLIHealth `json:"codex,omitempty"`
	Processes struct {
		Running int `json:"running"`
		Waiting int `json:"waiting"`
		Max     int `json:"max"`
	} `json:"processes"`
	// Host is the instance's host id; Store where its shared state lives.
	Host  string `json:"host,omitempty"`
	Store *struct {
		Engine    string `json:"engine"`
		LiveHosts int    `json:"live_hosts"`
	} `json:"store,omitempty"`
}

// CLIHealth is what /health says of the CLI.
type CLIHealth struct {
	Found   bool   `json:"found"`
	Version string `json:"version"`
	Auth    *struct {
		LoggedIn bool   `json:"logged_in"`
		Method   string `json:"method"`
	} `json:"auth"`
	Error string `json:"error"`
}

// CLI is the CLI whichever it is.
func (h *Health) CLI() CLIHealth {
	switch {
	case h.Claude != nil:
		return *h.Claude
	case h.Agy != nil:
		return *h.Agy
	case h.Codex != nil:
		return *h.Codex
	}
	return CLIHealth{}
}

// Today is the day's request figures from /telemetry/summary.
type Today struct {
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Cost     float64 `json:"cost_usd"`
	Live     int     `json:"live_processes"`
	Idle     int     `json:"idle_processes"`
	Spares   int     `json:"spare_processes"`
}

// Probe asks the server at baseURL (http://host:port). apiKey, when set,
// is sent to read the figures that need it.
func Probe(ctx context.Context, baseURL, apiKey string) (Report, error) {
	r := Report{URL: baseURL, CheckedAt: time.Now()}
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (*http.Response, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+path, nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", "application/json")
		if apiKey != "" {
			req.Header.Set("X-Api-Key", apiKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, body, err
	}
	resp, body, err := get("/")
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return r, fmt.Errorf("%w on %s", ErrNothing, strings.TrimPrefix(baseURL, "http://"))
		}
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			r.Holder = "something that accepts connections but does not answer HTTP in time"
			return r, nil
		}
		r.Holder = "something that does not speak HTTP (" + err.Error() + ")"
		return r, nil
	}
	var root struct {
		Service string `json:"service"`
		Version string `json:"version"`
		PID     int    `json:"pid"`
	}
	if json.Unmarshal(body, &root) != nil || root.Service != "meridian" {
		r.Holder = fmt.Sprintf("an HTTP server that is not Meridian (GET / answered %d", resp.StatusCode)
		if s := resp.Header.Get("Server"); s != "" {
			r.Holder += ", server " + s
		}
		r.Holder += ")"
		return r, nil
	}
	r.Meridian, r.Version, r.PID = true, root.Version, root.PID
	if resp, body, err := get("/health"); err == nil {
		var h Health
		if json.Unmarshal(body, &h) == nil && h.Status != "" {
			r.Health = &h
		} else {
			r.Problems = append(r.Problems, fmt.Sprintf("/health answered %d", resp.StatusCode))
		}
	}
	if resp, body, err := get("/telemetry/summary?window=24h"); err == nil {
		switch resp.StatusCode {
		case http.StatusOK:
			var s struct {
				Totals struct {
					Requests int     `json:"requests"`
					Errors   int     `json:"errors"`
					Cost     float64 `json:"cost_usd"`
				} `json:"totals"`
				Processes struct {
					Live   int `json:"live_processes"`
					Idle   int `json:"idle_processes"`
					Spares int `json:"spare_processes"`
				} `json:"processes"`
			}
			if json.Unmarshal(body, &s) == nil {
				// Dollars to the hundredth of a cent: the estimate is no finer.
				r.Today = &Today{Requests: s.Totals.Requests, Errors: s.Totals.Errors, Cost: math.Round(s.Totals.Cost*1e4) / 1e4,
					Live: s.Processes.Live, Idle: s.Processes.Idle, Spares: s.Processes.Spares}
			}
		case http.StatusUnauthorized:
			r.Problems = append(r.Problems, "the request figures need the admin key (--admin-key or MERIDIAN_ADMIN_KEY)")
		}
	}
	return r, nil
}

// Text is the report for a person.
func (r Report) Text() string {
	var b strings.Builder
	if !r.Meridian {
		fmt.Fprintf(&b, "%s is held by %s.\n", strings.TrimPrefix(r.URL, "http://"), r.Holder)
		return b.String()
	}
	fmt.Fprintf(&b, "Meridian %s at %s", r.Version, r.URL)
	if r.PID > 0 {
		fmt.Fprintf(&b, " (pid %d)", r.PID)
	}
	b.WriteString("\n")
	if h := r.Health; h != nil {
		fmt.Fprintf(&b, "  status     %s\n", h.Status)
		name, cli := "claude", h.CLI()
		switch {
		case h.Agy != nil:
			name = "agy"
		case h.Codex != nil:
			name = "codex"
		}
		switch {
		case !cli.Found:
			fmt.Fprintf(&b, "  %-10s not found: %s\n", name, cli.Error)
		case cli.Auth != nil && cli.Auth.LoggedIn:
			fmt.Fprintf(&b, "  %-10s %s, logged in (%s)\n", name, cli.Version, cli.Auth.Method)
		case cli.Auth != nil:
			fmt.Fprintf(&b, "  %-10s %s, not logged in\n", name, cli.Version)
		default:
			fmt.Fprintf(&b, "  %-10s %s\n", name, cli.Version)
		}
		fmt.Fprintf(&b, "  slots      %d running, %d waiting, of %d\n", h.Processes.Running, h.Processes.Waiting, h.Processes.Max)
		if h.Host != "" && h.Store != nil {
			fmt.Fprintf(&b, "  host       %s, store %s (%d live hosts)\n", h.Host, h.Store.Engine, h.Store.LiveHosts)
		}
	}
	if t := r.Today; t != nil {
		fmt.Fprintf(&b, "  processes  %d live (%d idle, %d spare)\n", t.Live, t.Idle, t.Spares)
		fmt.Fprintf(&b, "  last 24 h  %d requests, %d errors, $%.4f API-equivalent (estimate)\n", t.Requests, t.Errors, t.Cost)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "  note       %s\n", p)
	}
	fmt.Fprintf(&b, "  pages      %s/telemetry  %s/providers\n", r.URL, r.URL)
	return b.String()
}
