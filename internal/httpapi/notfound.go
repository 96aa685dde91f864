package httpapi

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/suggest"
)

// routes are the paths that answer 405 rather than 404 to a wrong
// method, each with the method it takes (the Allow header).
func routes() map[string]string {
	return map[string]string{
		"/v1/messages": "POST", "/messages": "POST", "/v1/messages/count_tokens": "POST", "/messages/count_tokens": "POST",
		"/v1/chat/completions": "POST", "/chat/completions": "POST", "/v1/responses": "POST", "/responses": "POST",
		"/v1/models": "GET", "/v1/sessions": "GET", "/health": "GET", "/ready": "GET", "/cluster": "GET", "/inflight": "GET", "/": "GET",
	}
}

// notFound answers a route that does not exist, naming the one meant
// when the path is a near miss (/v1/message), and a wrong method on a
// route that does with 405 and the methods it takes.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	known := routes()
	if allow, ok := known[r.URL.Path]; ok {
		w.Header().Set("Allow", allow)
		writeError(w, r, &gateway.Error{Status: http.StatusMethodNotAllowed, Type: anthropic.ErrInvalidRequest,
			Message: fmt.Sprintf("method %s is not allowed on %s; it takes %s", r.Method, r.URL.Path, allow)})
		return
	}
	msg := fmt.Sprintf("not found: %s %s", r.Method, r.URL.Path)
	paths := make([]string, 0, len(known))
	for p := range known {
		if p != "/" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if near := suggest.Nearest(r.URL.Path, paths); near != "" {
		msg += fmt.Sprintf("; did you mean %s %s?", known[near], near)
	}
	writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: "not_found_error", Message: msg})
}
