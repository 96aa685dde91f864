package gateway

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/suggest"
)

// modelHintWait bounds the wait for the model list an unknown model's
// error names; it is cached, so usually no wait at all.
const modelHintWait = 3 * time.Second

// failed is the client's error for a turn the backend failed: its class,
// what the request's output format makes of it, and for a model the
// upstream does not know, where the known ones are listed and the one
// that was probably meant.
func (g *Gateway) failed(ctx context.Context, r *relay, f *backend.Failure) *Error {
	e := r.misfit(classify(f, g.cfg.CLI, g.window.get(g.cfg.Now()), g.cfg.Now()), f)
	if e.Status != http.StatusNotFound || e.Type != anthropic.ErrNotFound || r.start.Model == "" {
		return e
	}
	e.Message = strings.TrimRight(e.Message, " .") + ". GET /v1/models lists the models this Meridian offers"
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), modelHintWait)
	defer cancel()
	if models, err := g.Models(ctx); err == nil {
		var names []string
		for _, m := range models {
			names = append(names, m.Alias, m.ID)
		}
		if near := suggest.Nearest(r.start.Model, names); near != "" && near != r.start.Model {
			e.Message += "; did you mean " + near + "?"
		}
	}
	return e
}
