package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// modelRoutes are the routes whose body names the model that answers.
var modelRoutes = map[string]bool{
	"/v1/messages":              true,
	"/v1/messages/count_tokens": true,
	"/v1/chat/completions":      true,
	"/v1/responses":             true,
}

// byModel serves a model request on this server's own routes with the
// mount whose vendor's model it names (combined mode: GPT models on
// codex, Gemini models on agy); every other request, one that names a
// profile (X-Meridian-Profile chose a gateway), and a model of no
// mount's vendor, goes on to next. The body is read once, bounded as
// everywhere, and handed on whole.
func (s *Server) byModel(next http.Handler) http.Handler {
	var owned []Mount
	for _, m := range s.cfg.Mounts {
		if m.Owner != "" {
			owned = append(owned, m)
		}
	}
	if len(owned) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !modelRoutes[r.URL.Path] || named(r.Context()) != nil {
			next.ServeHTTP(w, r)
			return
		}
		head, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.Listen.MaxBodyBytes+1))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		if err != nil {
			next.ServeHTTP(w, r) // the error is met again, and answered, there
			return
		}
		owner := ownerOf(modelOf(head))
		for _, m := range owned {
			if m.Owner == owner {
				m.Handler.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readCloser is a body read again from its start, closed as the original.
type readCloser struct {
	io.Reader
	io.Closer
}

// modelOf is the model a request body names ("" for none, or a body
// that is not a JSON object).
func modelOf(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return strings.TrimSpace(m.Model)
}
