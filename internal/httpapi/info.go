package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/modelalias"
)

// infoRoutes say what this Meridian is and serves: its root, its health
// and the models of its CLI.
type infoRoutes struct {
	version, host string
	backends      *backends
	cluster       *clusterRoutes
	site          *pageRoutes
	aliases       *modelalias.Book
	log           *slog.Logger
}

// root serves GET and HEAD / (Claude Code probes it when it starts): the
// landing page for a browser, its plain-text summary for curl and the
// like, and what this is as JSON for a program.
func (s *infoRoutes) root(w http.ResponseWriter, r *http.Request) {
	switch {
	case wantsHTML(r):
		s.site.landing(w, r)
		return
	case wantsText(r):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, landingText(s.version, "http://"+r.Host, s.site.landingData(r)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"service":   "meridian",
		"version":   s.version,
		"pid":       os.Getpid(),
		"endpoints": apiEndpoints(),
	})
}

// apiEndpoints are the API routes GET / names, every model route among
// them.
func apiEndpoints() []string {
	return []string{
		"POST /v1/messages", "POST /v1/messages/count_tokens", "POST /v1/chat/completions",
		"POST /v1/responses", "GET /v1/responses/{id}", "DELETE /v1/responses/{id}",
		"GET /v1/responses/{id}/input_items", "POST /v1/responses/{id}/cancel",
		"GET /v1/models", "GET /v1/models/{id}", "GET /v1/usage/quota",
		"GET /v1/sessions", "GET /v1/sessions/{key}", "POST /v1/sessions/{key}/cancel",
		"GET /inflight", "GET /health", "GET /ready", "GET /cluster", "GET /metrics",
	}
}

// profileHealth is one profile's part of GET /health.
type profileHealth struct {
	Name string `json:"name"`
	gateway.Health
}

// health serves GET /health: 200 when the chosen (or default) profile can
// serve requests, 503 when its CLI is missing or not logged in. With
// several profiles each reports its own login: another profile logged out
// makes the answer "degraded", never unavailable.
func (s *infoRoutes) health(w http.ResponseWriter, r *http.Request) {
	chosen := s.backends.of(r.Context())
	h := chosen.Health(r.Context())
	body := struct {
		gateway.Health
		Host     string          `json:"host,omitempty"`
		Draining bool            `json:"draining,omitempty"`
		Paused   bool            `json:"paused,omitempty"`
		Store    *storeHealth    `json:"store,omitempty"`
		Profiles []profileHealth `json:"profiles,omitempty"`
	}{Health: h, Host: s.host, Draining: s.cluster.draining(), Paused: s.cluster.paused(), Store: s.cluster.storeHealth(r.Context(), false)}
	if profiles := s.backends.dispatch.Profiles(); len(profiles) > 1 {
		// Each profile's probe is cached and single-flight in its gateway;
		// the checks run side by side, each with the caller's patience.
		body.Profiles = make([]profileHealth, len(profiles))
		var wg sync.WaitGroup
		for i, p := range profiles {
			wg.Go(func() { body.Profiles[i] = profileHealth{Name: p.Name, Health: p.Gateway.Health(r.Context())} })
		}
		wg.Wait()
		for _, ph := range body.Profiles {
			if ph.Status != "ok" && body.Status == "ok" {
				body.Status = "degraded"
			}
		}
	}
	status := http.StatusOK
	if h.Status == "unavailable" {
		status = http.StatusServiceUnavailable
		// Every 503 says when to look again.
		retryHeaders(w.Header(), gateway.Unavailable("the "+chosen.CLI().Name+" CLI is not usable"))
	}
	writeJSON(w, status, body)
}

// countTokens serves POST /v1/messages/count_tokens with an estimate: the
// CLI cannot count tokens, so the answer is marked as estimated.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	req, _, ok := s.decodeMessages(w, r)
	if !ok {
		return
	}
	// A key's scope holds here too, on the model that would answer; its
	// limits count the turns it runs, and an estimate runs none.
	s.resolveModel(w, r, req)
	if k := caller(r.Context()); k != nil && !inScope(w, r, k, req.Model) {
		return
	}
	w.Header().Set(headerTokenEstimate, "true")
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": gateway.EstimateTokens(req)})
}

// listModels serves GET /v1/models in the Anthropic list shape when the
// client speaks Anthropic (it sends anthropic-version or x-api-key), else
// in the OpenAI shape.
func (s *infoRoutes) listModels(w http.ResponseWriter, r *http.Request) {
	gw := s.backends.of(r.Context())
	models, err := gw.Models(r.Context())
	if err != nil {
		failWith(s.log, w, r, modelsError(gw.CLI().Name, err))
		return
	}
	if named(r.Context()) == nil {
		// The other CLIs mounted here answer their vendors' models on
		// these routes too: listed after this one's. One that cannot
		// list its models now is left out, not the whole list.
		for _, other := range s.backends.mounted {
			more, err := other.Models(r.Context())
			if err != nil {
				s.log.WarnContext(r.Context(), "a mounted backend could not list its models; /v1/models leaves them out", "cli", other.CLI().Name, "err", err)
				continue
			}
			models = append(slices.Clip(models), more...)
		}
	}
	entries := s.withAliases(r, modelEntries(models))
	if anthropicClient(r) {
		data := make([]anthropicModel, len(entries))
		for i, e := range entries {
			data[i] = e.anthropic()
		}
		resp := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
		if len(data) > 0 {
			resp["first_id"], resp["last_id"] = data[0].ID, data[len(data)-1].ID
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	data := make([]openAIModel, len(entries))
	for i, e := range entries {
		data[i] = e.openAI()
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// getModel serves GET /v1/models/{id}.
func (s *infoRoutes) getModel(w http.ResponseWriter, r *http.Request) {
	gw := s.backends.of(r.Context())
	models, err := gw.Models(r.Context())
	if err != nil {
		failWith(s.log, w, r, modelsError(gw.CLI().Name, err))
		return
	}
	id := r.PathValue("id")
	for _, e := range s.withAliases(r, modelEntries(models)) {
		if e.id == id {
			if anthropicClient(r) {
				writeJSON(w, http.StatusOK, e.anthropic())
			} else {
				writeJSON(w, http.StatusOK, e.openAI())
			}
			return
		}
	}
	writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "model not found: " + id})
}

// modelsError is a model list the CLI could not give, in words without
// local paths.
func modelsError(cli string, err error) error {
	return &gateway.Error{Status: http.StatusServiceUnavailable, Type: anthropic.ErrAPI,
		Message: "could not list the " + cli + " CLI's models: " + gateway.Redact(err.Error()), RetryAfter: 5 * time.Second}
}

func anthropicClient(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
}

type modelEntry struct {
	id, display string
	// alias: an alias of the operator's, listed after the CLI's models.
	alias bool
}

func (e modelEntry) openAI() openAIModel {
	owner := ownerOf(e.id)
	if e.alias {
		owner = "meridian"
	}
	return openAIModel{ID: e.id, Object: "model", OwnedBy: owner}
}

// ownerOf is the vendor of a model by its name: the CLIs' own lists
// (codex's GPT models, agy's Gemini ones) beside Claude's.
func ownerOf(id string) string {
	l := strings.ToLower(id)
	switch {
	case strings.HasPrefix(l, "gpt-"), strings.HasPrefix(l, "codex"), len(l) > 1 && l[0] == 'o' && l[1] >= '0' && l[1] <= '9':
		return "openai"
	case strings.HasPrefix(l, "gemini"):
		return "google"
	}
	return "anthropic"
}

// withAliases lists the operator's aliases after the CLI's models, each
// saying what it stands for; an alias named like a model of the CLI
// replaces that model's entry (a request for the name gets the alias).
func (s *infoRoutes) withAliases(r *http.Request, entries []modelEntry) []modelEntry {
	list := s.aliases.List(r.Context(), time.Now())
	if len(list) == 0 {
		return entries
	}
	named := map[string]bool{}
	for _, a := range list {
		named[a.Name] = true
	}
	out := slices.DeleteFunc(slices.Clone(entries), func(e modelEntry) bool { return named[e.id] })
	for _, a := range list {
		display := "alias of " + a.Model
		if a.Effort != "" {
			display += " at " + a.Effort + " effort"
		}
		out = append(out, modelEntry{id: a.Name, display: display, alias: true})
	}
	return out
}

type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (e modelEntry) anthropic() anthropicModel {
	// The CLI does not report release dates; the epoch marks "unknown".
	return anthropicModel{Type: "model", ID: e.id, DisplayName: e.display, CreatedAt: "1970-01-01T00:00:00Z"}
}

// modelEntries lists each resolved model id once, then the aliases the CLI
// accepts for them ("opus"), skipping its "default" pseudo-model.
func modelEntries(models []backend.Model) []modelEntry {
	var ids, aliases []modelEntry
	seen := map[string]bool{}
	for _, m := range models {
		display := m.DisplayName
		if before, _, ok := strings.Cut(m.Description, " · "); ok && before != "" {
			display = before // "Opus 5.5" rather than "Opus"
		}
		if m.ID != "" && !seen[m.ID] {
			seen[m.ID] = true
			ids = append(ids, modelEntry{id: m.ID, display: display})
		}
		if m.Alias != "" && m.Alias != "default" && !seen[m.Alias] {
			seen[m.Alias] = true
			aliases = append(aliases, modelEntry{id: m.Alias, display: display + " (latest)"})
		}
	}
	return append(ids, aliases...)
}

// writeJSON answers with v as a JSON body; the error is the write's, which
// only an answer's record looks at.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	status, body := encodeJSON(status, v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// encodeJSON is v's body at status, or a 500 that says it could not be.
func encodeJSON(status int, v any) (int, []byte) {
	body, err := json.Marshal(v)
	if err != nil {
		return http.StatusInternalServerError, anthropic.AppendError(nil, anthropic.ErrAPI, "could not encode the response", 0)
	}
	return status, body
}
