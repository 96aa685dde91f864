package httpapi

import (
	"net/http"

	"github.com/meridian-gw/meridian/internal/gateway"
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
	done, ok := s.access.admitKey(w, r, c.req.Body.Model)
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
	if s.routed(w, r, c.raw, c.req) {
		return
	}
	if c.background {
		s.dispatch.Retire(r.Context(), credentialScope(r), resultIDs(c.req.Body))
		answer(w, c.req, key)
		return
	}
	s.once(w, r, c.raw, c.req.Body, func(w http.ResponseWriter) { answer(w, c.req, key) })
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
