package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// Bounds of a header that names what a request sent: clients choose those
// names (a tool's), so each is cut short and the whole list too.
const (
	maxReflectedItem  = 64
	maxReflectedValue = 1024
)

// withOutputLimit adds the request's output limit, named by field ("" when
// it set none), to what is ignored when its backend cannot honour one.
func (s *Server) withOutputLimit(r *http.Request, ignored []string, field string) []string {
	if field == "" || s.backends.of(r.Context()).HonoursOutputLimit() {
		return ignored
	}
	return append(slices.Clip(ignored), field)
}

// searchIgnored adds what of a request's web search is not honoured: the
// options a search cannot take when the backend searches, else the whole
// search (named as the request named it).
func searchIgnored(ignored []string, searches bool, whole string, unhonoured []string) []string {
	if searches {
		return append(slices.Clip(ignored), unhonoured...)
	}
	return append(slices.Clip(ignored), whole)
}

// setIgnored names, in X-Meridian-Ignored-Params, the parameters the
// backend cannot honour. Values are reduced to printable ASCII and
// bounded: a client never makes Meridian send an arbitrary header.
func setIgnored(h http.Header, ignored []string) {
	if len(ignored) == 0 {
		return
	}
	var b strings.Builder
	for i, item := range ignored {
		part := reflectable(item, maxReflectedItem)
		if i > 0 {
			part = ", " + part
		}
		if b.Len()+len(part) > maxReflectedValue {
			b.WriteString(", ...")
			break
		}
		b.WriteString(part)
	}
	h.Set(headerIgnored, b.String())
}

// reflectable keeps a client's string safe for a header: printable ASCII,
// at most max bytes.
func reflectable(s string, max int) string {
	out := make([]byte, 0, min(len(s), max))
	for i := 0; i < len(s) && len(out) < max; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out = append(out, c)
	}
	if len(s) > max {
		return string(out) + "..."
	}
	return string(out)
}
