package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/web"
)

// wantsText reports a request for GET / from a terminal's HTTP client
// (curl, wget, HTTPie), or one that asks for plain text.
func wantsText(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "text/plain") {
		return true
	}
	ua := r.UserAgent()
	terminal := strings.HasPrefix(ua, "curl/") || strings.HasPrefix(ua, "Wget/") || strings.HasPrefix(ua, "HTTPie/")
	return terminal && (accept == "" || accept == "*/*")
}

// landingText is the landing page as text for a terminal: how this
// Meridian stands, its CLIs, today's requests, and where clients point.
func landingText(version, base string, l web.Landing) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Meridian %s at %s: %s\n", version, base, l.Status)
	if l.NewerRelease != "" {
		fmt.Fprintf(&b, "  a newer release is out: %s\n", l.NewerRelease)
	}
	for _, c := range l.Backends {
		where := ""
		if c.Prefix != "" {
			where = " under " + c.Prefix + "/"
		}
		switch {
		case !c.Found:
			fmt.Fprintf(&b, "  %s%s: the %s CLI is not found\n", c.Backend, where, c.CLI)
		default:
			fmt.Fprintf(&b, "  %s%s: %s %s, %s\n", c.Backend, where, c.CLI, c.Version, c.Login)
		}
	}
	fmt.Fprintf(&b, "  %s: %d live (%d idle, %d spare); turns: %d running of %d slots, %d queued\n", l.ProcessesLabel,
		l.Processes.Live, l.Processes.Idle, l.Processes.Spares, l.Processes.Running, l.Processes.Slots, l.Processes.Queued)
	fmt.Fprintf(&b, "  today: %d requests, %d failed, %d refused as the client's to fix, %s API-equivalent\n",
		l.RequestsToday, l.FailedToday, l.ClientErrorsToday, l.CostToday)
	if l.KeyRequired {
		b.WriteString("  requests need a key (meridian key add)\n")
	}
	b.WriteString("\nPoint clients here:\n")
	for _, h := range l.Hints {
		fmt.Fprintf(&b, "  %-38s %s\n", h.Client, h.Setting)
	}
	fmt.Fprintf(&b, "\nIn a browser: %s/  ·  as JSON: %s/health  ·  meridian status\n", base, base)
	return b.String()
}
