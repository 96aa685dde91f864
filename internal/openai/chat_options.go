package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// decodeLimits reads the output limit and stop sequences.
func decodeLimits(top jsonbody.Object, req *ChatRequest) error {
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		v, ok := jsonbody.Present(top, name)
		if !ok {
			continue
		}
		n, err := jsonbody.Int(name, v)
		if err != nil {
			return err
		}
		if n < 1 {
			return jsonbody.Errorf(name, "must be at least 1")
		}
		req.MaxTokens, req.MaxTokensField = n, name // max_completion_tokens, read last, wins
	}
	v, ok := jsonbody.Present(top, "stop")
	if !ok {
		return nil
	}
	if s, isString, err := jsonbody.StringValue("stop", v); isString || err != nil {
		if err != nil {
			return err
		}
		if s != "" {
			req.Stop = []string{s}
		}
		return nil
	}
	if err := jsonbody.As("stop", v, &req.Stop, "a string or an array of strings"); err != nil {
		return err
	}
	if len(req.Stop) > maxStops {
		return jsonbody.Errorf("stop", "at most %d stop sequences are allowed", maxStops)
	}
	for i, s := range req.Stop {
		if s == "" {
			return jsonbody.Errorf(jsonbody.Index("stop", i), "must not be empty")
		}
	}
	return nil
}

func decodeStreaming(top jsonbody.Object, req *ChatRequest) error {
	if v, ok := jsonbody.Present(top, "stream"); ok {
		if err := jsonbody.As("stream", v, &req.Stream, "a boolean"); err != nil {
			return err
		}
	}
	v, ok := jsonbody.Present(top, "stream_options")
	if !ok {
		return nil
	}
	so, err := jsonbody.DecodeObject("stream_options", v)
	if err != nil {
		return err
	}
	if u, ok := jsonbody.Present(so, "include_usage"); ok {
		return jsonbody.As("stream_options.include_usage", u, &req.IncludeUsage, "a boolean")
	}
	return nil
}

var efforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

func decodeReasoning(top jsonbody.Object, req *ChatRequest) error {
	e, err := jsonbody.OptionalString(top, "", "reasoning_effort")
	if err != nil {
		return err
	}
	if e != "" && !slices.Contains(efforts, e) {
		return jsonbody.Errorf("reasoning_effort", "must be one of %s, got %q", strings.Join(efforts, ", "), e)
	}
	req.ReasoningEffort = e
	return nil
}

func decodeChatToolChoice(top jsonbody.Object, req *ChatRequest) error {
	return decodeToolChoice(top, &req.Ignored)
}

// decodeToolChoice checks tool_choice and parallel_tool_calls. The backend
// offers every tool on every turn and lets the model call several at once,
// so only the defaults are honoured; anything else is reported as ignored.
func decodeToolChoice(top jsonbody.Object, ignored *[]string) error {
	if v, ok := jsonbody.Present(top, "tool_choice"); ok {
		s, isString, err := jsonbody.StringValue("tool_choice", v)
		switch {
		case err != nil:
			return err
		case isString:
			if !slices.Contains([]string{"none", "auto", "required"}, s) {
				return jsonbody.Errorf("tool_choice", "must be none, auto, required or an object naming a function, got %q", s)
			}
			if s != "auto" {
				*ignored = append(*ignored, "tool_choice")
			}
		default:
			tc, err := jsonbody.DecodeObject("tool_choice", v)
			if err != nil {
				return jsonbody.Errorf("tool_choice", "expected a string or an object")
			}
			if _, err := jsonbody.RequiredString(tc, "tool_choice", "type"); err != nil {
				return err
			}
			*ignored = append(*ignored, "tool_choice")
		}
	}
	if v, ok := jsonbody.Present(top, "parallel_tool_calls"); ok {
		var parallel bool
		if err := jsonbody.As("parallel_tool_calls", v, &parallel, "a boolean"); err != nil {
			return err
		}
		if !parallel {
			*ignored = append(*ignored, "parallel_tool_calls")
		}
	}
	return nil
}

func decodeFormat(top jsonbody.Object, req *ChatRequest) error {
	v, ok := jsonbody.Present(top, "response_format")
	if !ok {
		return nil
	}
	rf, err := jsonbody.DecodeObject("response_format", v)
	if err != nil {
		return err
	}
	typ, err := jsonbody.RequiredString(rf, "response_format", "type")
	if err != nil {
		return err
	}
	f, more, err := formatType("response_format.type", typ)
	if err != nil || !more {
		req.Format = f
		return err
	}
	jv, ok := jsonbody.Present(rf, "json_schema")
	if !ok {
		return jsonbody.Errorf("response_format.json_schema", "Field required")
	}
	js, err := jsonbody.DecodeObject("response_format.json_schema", jv)
	if err != nil {
		return err
	}
	if f.Name, err = jsonbody.RequiredString(js, "response_format.json_schema", "name"); err != nil {
		return err
	}
	sv, ok := jsonbody.Present(js, "schema")
	if !ok {
		sv = json.RawMessage(`{}`)
	}
	if f.Schema, err = formatSchema("response_format.json_schema.schema", sv); err != nil {
		return err
	}
	req.Format = f
	return nil
}

// formatType reads a requested output format's type: text asks for
// nothing, json_object for any JSON; json_schema (more) still needs its
// name and schema read.
func formatType(path, typ string) (f *ResponseFormat, more bool, err error) {
	field := strings.TrimSuffix(path, ".type")
	switch typ {
	case "text":
		return nil, false, nil
	case "json_object":
		return &ResponseFormat{Type: typ, Field: field}, false, nil
	case "json_schema":
		return &ResponseFormat{Type: typ, Field: field}, true, nil
	}
	return nil, false, jsonbody.Errorf(path, "must be text, json_object or json_schema, got %q", typ)
}

// formatSchema checks a format's schema: an object the checker compiles.
func formatSchema(path string, sv json.RawMessage) (json.RawMessage, error) {
	if _, err := jsonbody.DecodeObject(path, sv); err != nil {
		return nil, err
	}
	if _, err := compileFormat(sv); err != nil {
		return nil, jsonbody.Errorf(path, "not a usable JSON Schema: %v", err)
	}
	return sv, nil
}

// refuseTopLogprobs refuses log probabilities asked for by count.
func refuseTopLogprobs(top jsonbody.Object) error {
	v, ok := jsonbody.Present(top, "top_logprobs")
	if !ok {
		return nil
	}
	n, err := jsonbody.Int("top_logprobs", v)
	if err != nil {
		return err
	}
	if n != 0 {
		return jsonbody.Errorf("top_logprobs", "log probabilities are not available from the claude backend")
	}
	return nil
}

func decodeChatIdentity(top jsonbody.Object, req *ChatRequest) error {
	return decodeIdentity(top, &req.Identity)
}

func decodeIdentity(top jsonbody.Object, req *Identity) error {
	var err error
	if req.User, err = jsonbody.OptionalString(top, "", "user"); err != nil {
		return err
	}
	if req.PromptCacheKey, err = jsonbody.OptionalString(top, "", "prompt_cache_key"); err != nil {
		return err
	}
	if _, err = jsonbody.OptionalString(top, "", "safety_identifier"); err != nil {
		return err
	}
	if v, ok := jsonbody.Present(top, "metadata"); ok {
		if err := jsonbody.As("metadata", v, &req.Metadata, "an object of strings"); err != nil {
			return err
		}
	}
	return nil
}

// decodeRefused refuses what would change the answer's shape in ways the
// backend cannot produce: several choices, log probabilities, audio.
func decodeRefused(top jsonbody.Object, _ *ChatRequest) error {
	if v, ok := jsonbody.Present(top, "n"); ok {
		n, err := jsonbody.Int("n", v)
		if err != nil {
			return err
		}
		if n != 1 {
			return jsonbody.Errorf("n", "only n: 1 is supported: the claude backend produces one choice, got %d", n)
		}
	}
	if v, ok := jsonbody.Present(top, "logprobs"); ok {
		var lp bool
		if err := jsonbody.As("logprobs", v, &lp, "a boolean"); err != nil {
			return err
		}
		if lp {
			return jsonbody.Errorf("logprobs", "log probabilities are not available from the claude backend")
		}
	}
	if err := refuseTopLogprobs(top); err != nil {
		return err
	}
	if _, ok := jsonbody.Present(top, "audio"); ok {
		return jsonbody.Errorf("audio", "audio output is not supported by the claude backend")
	}
	if v, ok := jsonbody.Present(top, "modalities"); ok {
		var mods []string
		if err := jsonbody.As("modalities", v, &mods, "an array of strings"); err != nil {
			return err
		}
		for i, m := range mods {
			if m != "text" {
				return jsonbody.Errorf(jsonbody.Index("modalities", i), "only text output is supported, got %q", m)
			}
		}
	}
	return nil
}

// ignoredParams are accepted with their type checked, and reported: the
// CLI has no way to take them.
type ignoredParam struct{ name, want string }

var ignoredParams = []ignoredParam{
	{"temperature", "number"},
	{"top_p", "number"},
	{"frequency_penalty", "number"},
	{"presence_penalty", "number"},
	{"seed", "number"},
	{"logit_bias", "object"},
	{"service_tier", "string"},
	{"prediction", "object"},
	{"verbosity", "string"},
}

func decodeIgnored(top jsonbody.Object, req *ChatRequest) error {
	ignored, err := ignoredOf(top, ignoredParams)
	req.Ignored = append(req.Ignored, ignored...)
	return err
}

// ignoredOf type-checks the parameters of list that are present and
// names them.
func ignoredOf(top jsonbody.Object, list []ignoredParam) ([]string, error) {
	var names []string
	for _, p := range list {
		v, ok := jsonbody.Present(top, p.name)
		if !ok {
			continue
		}
		var dst any
		switch p.want {
		case "number":
			dst = new(float64)
		case "string":
			dst = new(string)
		default:
			dst = new(map[string]json.RawMessage)
		}
		if err := jsonbody.As(p.name, v, dst, article(p.want)); err != nil {
			return nil, err
		}
		names = append(names, p.name)
	}
	return names, nil
}

// decodeWebSearch reads web_search_options: the search runs where the
// backend can search; where the results come from and how much of them
// the model reads are the search's own business.
func decodeWebSearch(top jsonbody.Object, req *ChatRequest) error {
	v, ok := jsonbody.Present(top, "web_search_options")
	if !ok || jsonbody.IsAbsent(v) {
		return nil
	}
	opts, err := jsonbody.DecodeObject("web_search_options", v)
	if err != nil {
		return err
	}
	req.WebSearch = true
	for _, name := range []string{"user_location", "search_context_size"} {
		if o, ok := jsonbody.Present(opts, name); ok && !jsonbody.IsAbsent(o) {
			req.WebSearchUnhonoured = append(req.WebSearchUnhonoured, "web_search_options."+name)
		}
	}
	return nil
}

// decodeStore reports store: true, which chat completions never honour.
func decodeStore(top jsonbody.Object, req *ChatRequest) error {
	if v, ok := jsonbody.Present(top, "store"); ok {
		var store bool
		if err := jsonbody.As("store", v, &store, "a boolean"); err != nil {
			return err
		}
		if store {
			req.Ignored = append(req.Ignored, "store")
		}
	}
	return nil
}

func article(want string) string {
	if want == "object" {
		return "an object"
	}
	return fmt.Sprintf("a %s", want)
}
