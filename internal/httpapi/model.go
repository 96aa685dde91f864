package httpapi

import (
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"

	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/tracing"
)

// modelCall is a decoded model request of any API, in the Messages form
// the gateways run, with its body as it came (forwarded as is).
type modelCall struct {
	raw []byte
	req gateway.Request
	// background: the answer is a stored response that runs on its own,
	// not replayed to a retry (its tool results still retire the saved
	// batch that asked for them).
	background bool
}

// serveModel is the one sequence every model request takes, whatever its
// API and whether it runs in the background: its key's admission, then
// the host that holds its conversation, then a retry's saved answer, and
// only then answer, which writes the API's own answer here. A key's hold
// ends when the handler returns, unless answer hands it to a run that
// outlives the request. The request names its conversation once, for the
// routing, the profile's choice and the answer.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, c modelCall, answer func(http.ResponseWriter, gateway.Request, *keyHold)) {
	s.resolveModel(w, r, c.req.Body)
	_, check := tracing.Start(r.Context(), "key check", tracing.Internal)
	done, ok := s.access.admitKey(w, r, c.req.Body.Model)
	check.End()
	if !ok {
		return
	}
	key := &keyHold{done: done}
	defer func() {
		if !key.taken {
			key.done()
		}
	}()
	c.req = c.req.Identified()
	// The dispatch span holds the choice of host, and the hop to another
	// when the conversation is held there; a turn here is its sibling.
	ctx, span := tracing.Start(r.Context(), "dispatch", tracing.Internal)
	relayed := s.routed(w, r.WithContext(ctx), c.raw, c.req)
	span.End()
	if relayed {
		return
	}
	if c.background {
		s.dispatch.Retire(r.Context(), credentialScope(r), resultIDs(c.req.Body))
		answer(w, c.req, key)
		return
	}
	s.once(w, r, c.raw, c.req.Body, func(w http.ResponseWriter) { answer(w, c.req, key) })
}

// headerModel names the model a request's model name stood for (an alias,
// or "default" with its key's default model), when it stood for another.
const headerModel = "X-Meridian-Model"

// resolveModel rewrites what a request asks for as its key and the
// aliases say: "default" is its key's default model when the key has
// one, and an alias is its model (with its effort, unless the request set
// one). The key's scope is then checked against the model that answers.
// The body as it came is what another host is forwarded, which resolves
// it alike from the store they share.
func (s *Server) resolveModel(w http.ResponseWriter, r *http.Request, req *anthropic.MessagesRequest) {
	asked := req.Model
	if k := caller(r.Context()); k != nil && k.DefaultModel != "" && req.Model == "default" {
		req.Model = k.DefaultModel
	}
	if a, ok := s.aliases.Resolve(r.Context(), req.Model, time.Now()); ok {
		req.Model = a.Model
		if req.Effort == "" {
			req.Effort = a.Effort
		}
	}
	if req.Model != asked {
		w.Header().Set(headerModel, req.Model)
	}
}

// keyHold is a request's count against its API key's limits.
type keyHold struct {
	done  func()
	taken bool
}

// take hands the count to a run that outlives the request, which ends it.
func (k *keyHold) take() func() {
	k.taken = true
	return k.done
}

// giveBack returns the count to the request when the run did not start.
func (k *keyHold) giveBack() { k.taken = false }
