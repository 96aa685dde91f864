package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/schemacheck"
)

// withFormat applies a request's structured output to the options it
// runs with: a backend that enforces a schema itself gets it; any other
// is asked for it in the system prompt (an OpenAI client's answer is
// still checked when it is complete, in its own protocol's terms).
func (g *Gateway) withFormat(opts backend.StartOptions, f *anthropic.OutputFormat) backend.StartOptions {
	if f == nil {
		return opts
	}
	if _, ok := g.cfg.Backend.(backend.SchemaEnforcer); ok {
		opts.JSONSchema = f.Schema
		return opts
	}
	opts.System = append(slices.Clip(opts.System), formatInstruction(f.Schema))
	return opts
}

// formatInstruction asks, in the system prompt, for an answer fitting a
// schema, for a backend that cannot enforce one.
func formatInstruction(schema json.RawMessage) string {
	var compact bytes.Buffer
	if json.Compact(&compact, schema) != nil {
		compact.Reset()
		compact.Write(schema)
	}
	if compact.String() == `{"type":"object"}` {
		return "Respond with a single JSON object and nothing else: no prose before or after it, no Markdown code fences."
	}
	return "Respond with a single JSON value that conforms to the following JSON Schema and nothing else: " +
		"no prose before or after it, no Markdown code fences.\n\n" + compact.String()
}

// structuredAnswer is the answer of a turn run under a schema: the value
// the backend checked, checked once more here, as the one text block the
// client receives. A turn that ended without one (the model answered in
// prose) is a misfit, never prose passed off as the value.
func structuredAnswer(f *anthropic.OutputFormat, res *backend.Result) (string, *Error) {
	misfit := func(reason string) *Error {
		return &Error{Status: http.StatusBadGateway, Type: anthropic.ErrAPI,
			Message: "the model's answer does not fit " + f.Field + ": " + reason}
	}
	if len(res.Structured) == 0 {
		return "", misfit("the model answered in prose instead of returning the structured output")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, res.Structured); err != nil {
		return "", misfit("the structured output is not JSON")
	}
	if sch, err := schemacheck.Compile(f.Schema); err == nil {
		if err := sch.Check(compact.Bytes()); err != nil {
			return "", misfit(fmt.Sprint(err))
		}
	}
	return compact.String(), nil
}

// structured sends a turn's structured answer, once, or returns its
// misfit; without a format it does nothing.
func (r *relay) structured(res *backend.Result) error {
	if r.format == nil || r.formatSent {
		return nil
	}
	text, misfit := structuredAnswer(r.format, res)
	if misfit != nil {
		return misfit
	}
	r.formatSent = true
	return r.emitStructured(text)
}

// misfit names the request's field in the error of a turn the backend
// ended because no answer fit the schema.
func (r *relay) misfit(e *Error, f *backend.Failure) *Error {
	if r.format == nil || f.Kind != backend.FailFormat {
		return e
	}
	out := *e
	out.Message = "the model's answer does not fit " + r.format.Field + ": " + f.Message
	return &out
}

// emitStructured sends the structured answer as one text block, the way
// the API streams one.
func (r *relay) emitStructured(text string) error {
	if err := r.begin(); err != nil {
		return err
	}
	idx := r.next
	r.next++
	start := json.RawMessage(`{"type":"text","text":""}`)
	r.reply.startBlock(idx, anthropic.BlockText, start)
	if err := r.out.BlockStart(idx, start); err != nil {
		return err
	}
	if err := r.writeText(idx, text); err != nil {
		return err
	}
	return r.out.BlockStop(idx)
}
