package openai

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// Hosted tools run by the API itself: they cannot be client tools, so they
// are reported as ignored. Anything else the decoder does not model is
// reported the same way rather than refused, as newer clients add types.
var hostedTools = []string{"web_search", "web_search_preview", "file_search", "code_interpreter", "computer_use_preview",
	"image_generation", "mcp", "local_shell", "tool_search"}

// DecodeResponsesRequest parses and validates a POST /v1/responses body.
// Unknown fields are ignored; every error is a *jsonbody.Error naming the
// field. Calls and their outputs are matched later, with the history of a
// previous response at hand (ResponsesRequest.Anthropic).
func DecodeResponsesRequest(body []byte) (*ResponsesRequest, error) {
	top, err := jsonbody.Top(body)
	if err != nil {
		return nil, err
	}
	req := &ResponsesRequest{Store: true}
	if req.Model, err = jsonbody.RequiredString(top, "", "model"); err != nil {
		return nil, err
	}
	if req.Model == "" {
		return nil, jsonbody.Errorf("model", "must not be empty")
	}
	if req.Input, err = decodeInput(top["input"]); err != nil {
		return nil, err
	}
	req.MediaAt = mediaAt("input", req.Input, func(it Item) []Part { return it.Parts })
	if req.Instructions, err = jsonbody.OptionalString(top, "", "instructions"); err != nil {
		return nil, err
	}
	if v, ok := jsonbody.Present(top, "tools"); ok {
		if req.Tools, err = decodeResponseTools(v, req); err != nil {
			return nil, err
		}
		req.RawTools = v
	}
	req.RawToolChoice, _ = jsonbody.Present(top, "tool_choice")
	for _, step := range []func(jsonbody.Object, *ResponsesRequest) error{
		decodeResponseLimits, decodeResponseReasoning, decodeResponseText, decodeResponseState, decodeResponseIdentity, decodeResponseRefused,
	} {
		if err := step(top, req); err != nil {
			return nil, err
		}
	}
	if err := decodeToolChoice(top, &req.Ignored); err != nil {
		return nil, err
	}
	ignored, err := ignoredOf(top, responseIgnoredParams)
	if err != nil {
		return nil, err
	}
	req.Ignored = append(req.Ignored, ignored...)
	return req, nil
}

func decodeInput(raw json.RawMessage) ([]Item, error) {
	if jsonbody.IsAbsent(raw) {
		return nil, jsonbody.Errorf("input", "Field required")
	}
	if s, ok, err := jsonbody.StringValue("input", raw); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return []Item{{Type: ItemMessage, Role: RoleUser, Parts: []Part{{Type: PartText, Text: s}}}}, nil
	}
	items, err := jsonbody.DecodeArray("input", raw)
	if err != nil {
		return nil, jsonbody.Errorf("input", "expected a string or an array of input items")
	}
	if len(items) == 0 {
		return nil, jsonbody.Errorf("input", "must contain at least one item")
	}
	if len(items) > maxMessages {
		return nil, jsonbody.Errorf("input", "at most %d items are allowed", maxMessages)
	}
	out := make([]Item, len(items))
	for i, raw := range items {
		if out[i], err = decodeItem(jsonbody.Index("input", i), raw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func decodeItem(path string, raw json.RawMessage) (Item, error) {
	obj, err := jsonbody.DecodeObject(path, raw)
	if err != nil {
		return Item{}, err
	}
	it := Item{}
	if it.Type, err = jsonbody.OptionalString(obj, path, "type"); err != nil {
		return it, err
	}
	if it.Type == "" {
		it.Type = ItemMessage // an "easy" message: role and content only
	}
	if it.ID, err = jsonbody.OptionalString(obj, path, "id"); err != nil {
		return it, err
	}
	switch it.Type {
	case ItemMessage:
		err = decodeItemMessage(path, obj, &it)
	case ItemFunctionCall:
		if it.CallID, err = requiredID(obj, path, "call_id"); err != nil {
			return it, err
		}
		if it.Name, err = jsonbody.RequiredString(obj, path, "name"); err != nil {
			return it, err
		}
		if it.Namespace, err = jsonbody.OptionalString(obj, path, "namespace"); err != nil {
			return it, err
		}
		if it.Arguments, err = jsonbody.OptionalString(obj, path, "arguments"); err != nil {
			return it, err
		}
		if strings.TrimSpace(it.Arguments) == "" {
			it.Arguments = "{}"
		}
		if _, err := jsonbody.DecodeObject(path+".arguments", json.RawMessage(it.Arguments)); err != nil {
			return it, jsonbody.Errorf(path+".arguments", "must be a JSON object as text")
		}
	case ItemCustomToolCall:
		it.Type, it.Custom = ItemFunctionCall, true
		if it.CallID, err = requiredID(obj, path, "call_id"); err != nil {
			return it, err
		}
		if it.Name, err = jsonbody.RequiredString(obj, path, "name"); err != nil {
			return it, err
		}
		input, err := jsonbody.OptionalString(obj, path, "input")
		if err != nil {
			return it, err
		}
		it.Arguments = customArguments(input)
	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		it.Custom, it.Type = it.Type == ItemCustomToolCallOutput, ItemFunctionCallOutput
		if it.CallID, err = requiredID(obj, path, "call_id"); err != nil {
			return it, err
		}
		v, ok := jsonbody.Present(obj, "output")
		if !ok {
			return it, jsonbody.Errorf(path+".output", "Field required")
		}
		it.Parts, err = decodeInputParts(path+".output", v, false)
	case ItemReasoning:
		err = decodeItemReasoning(path, obj, &it)
	case ItemReference:
		if it.Ref, err = requiredID(obj, path, "id"); err != nil {
			return it, err
		}
	case ItemWebSearchCall:
		// A search this gateway ran, sent back: its results live on in
		// the answer's text, so it adds nothing to the history.
	default:
		return it, jsonbody.Errorf(path+".type", "unsupported input item type %q; this gateway takes message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning, web_search_call and item_reference", it.Type)
	}
	return it, err
}

func requiredID(obj jsonbody.Object, path, key string) (string, error) {
	s, err := jsonbody.RequiredString(obj, path, key)
	if err == nil && s == "" {
		err = jsonbody.Errorf(jsonbody.Join(path, key), "must not be empty")
	}
	return s, err
}

func decodeItemMessage(path string, obj jsonbody.Object, it *Item) error {
	role, err := jsonbody.RequiredString(obj, path, "role")
	if err != nil {
		return err
	}
	switch role {
	case RoleUser, RoleSystem, RoleDeveloper, RoleAssistant:
	default:
		return jsonbody.Errorf(path+".role", "must be one of user, system, developer or assistant, got %q", role)
	}
	it.Role = role
	v, ok := jsonbody.Present(obj, "content")
	if !ok {
		return jsonbody.Errorf(path+".content", "Field required")
	}
	it.Parts, err = decodeInputParts(path+".content", v, role == RoleAssistant)
	return err
}

// decodeInputParts reads content: a string or parts. An assistant's
// history has output_text and refusal parts; everyone else's input_text
// and input_image.
func decodeInputParts(path string, raw json.RawMessage, assistant bool) ([]Part, error) {
	return decodeContent(path, raw, func(p, typ string, obj jsonbody.Object) (Part, error) {
		switch {
		case typ == "input_text" && !assistant, typ == "output_text" && assistant:
			text, err := jsonbody.RequiredString(obj, p, "text")
			return Part{Type: PartText, Text: text}, err
		case typ == "refusal" && assistant:
			text, err := jsonbody.RequiredString(obj, p, "refusal")
			return Part{Type: PartText, Text: text}, err
		case typ == "input_image" && !assistant:
			url, err := jsonbody.OptionalString(obj, p, "image_url")
			if err != nil {
				return Part{}, err
			}
			if url == "" {
				return Part{}, jsonbody.Errorf(p+".image_url", "Field required: images are taken as data or https URLs (file ids need the Files API, which this gateway does not serve)")
			}
			return imageURL(p+".image_url", url)
		case typ == "input_file" && !assistant:
			return decodeFile(p, obj)
		case typ == "input_audio" && !assistant:
			return decodeAudio(p, obj)
		}
		return Part{}, jsonbody.Errorf(p+".type", "unsupported content part %q here", typ)
	})
}

func decodeItemReasoning(path string, obj jsonbody.Object, it *Item) error {
	if v, ok := jsonbody.Present(obj, "summary"); ok {
		items, err := jsonbody.DecodeArray(path+".summary", v)
		if err != nil {
			return err
		}
		for i, item := range items {
			p := jsonbody.Index(path+".summary", i)
			so, _, err := typed(p, item)
			if err != nil {
				return err
			}
			text, err := jsonbody.RequiredString(so, p, "text")
			if err != nil {
				return err
			}
			it.Summary = append(it.Summary, text)
		}
	}
	var err error
	it.Encrypted, err = jsonbody.OptionalString(obj, path, "encrypted_content")
	return err
}

// decodeResponseTools reads tools: functions, namespaces of functions
// (flattened), and hosted tools, which are named as ignored.
func decodeResponseTools(raw json.RawMessage, req *ResponsesRequest) ([]Function, error) {
	ignored := &req.Ignored
	items, err := jsonbody.DecodeArray("tools", raw)
	if err != nil {
		return nil, err
	}
	var out []Function
	add := func(path string, f Function) error {
		if slices.ContainsFunc(out, func(o Function) bool { return o.Name == f.Name }) {
			return jsonbody.Errorf(path+".name", "the tool name %q is used twice", f.Name)
		}
		out = append(out, f)
		return nil
	}
	for i, item := range items {
		p := jsonbody.Index("tools", i)
		obj, typ, err := typed(p, item)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "function":
			f, err := decodeFlatFunction(p, obj)
			if err != nil {
				return nil, err
			}
			if err := add(p, f); err != nil {
				return nil, err
			}
		case "custom":
			f, err := decodeCustomTool(p, obj)
			if err != nil {
				return nil, err
			}
			if err := add(p, f); err != nil {
				return nil, err
			}
		case "namespace":
			ns, err := jsonbody.RequiredString(obj, p, "name")
			if err != nil {
				return nil, err
			}
			if ns == "" {
				return nil, jsonbody.Errorf(p+".name", "must not be empty")
			}
			v, ok := jsonbody.Present(obj, "tools")
			if !ok {
				return nil, jsonbody.Errorf(p+".tools", "Field required")
			}
			inner, err := jsonbody.DecodeArray(p+".tools", v)
			if err != nil {
				return nil, err
			}
			for j, t := range inner {
				tp := jsonbody.Index(p+".tools", j)
				to, ttyp, err := typed(tp, t)
				if err != nil {
					return nil, err
				}
				if ttyp != "function" {
					*ignored = append(*ignored, "tools: "+FlatName(ns, ttyp))
					continue
				}
				f, err := decodeFlatFunction(tp, to)
				if err != nil {
					return nil, err
				}
				f.Namespace, f.Local, f.Name = ns, f.Name, FlatName(ns, f.Name)
				if err := add(tp, f); err != nil {
					return nil, err
				}
			}
		case "web_search", "web_search_preview":
			if req.WebSearch != nil {
				return nil, jsonbody.Errorf(p+".type", "web search is offered twice")
			}
			ws, err := decodeResponsesWebSearch(p, obj, typ)
			if err != nil {
				return nil, err
			}
			req.WebSearch = ws
		default:
			name, _ := jsonbody.OptionalString(obj, p, "name")
			if name == "" || slices.Contains(hostedTools, typ) {
				name = typ
			}
			*ignored = append(*ignored, "tools: "+name)
		}
	}
	return out, nil
}

// decodeResponsesWebSearch reads the web_search hosted tool: the domains
// its results must come from pass to the search; its location and
// context size are named as what a search cannot take.
func decodeResponsesWebSearch(path string, obj jsonbody.Object, typ string) (*WebSearch, error) {
	ws := &WebSearch{Tool: typ}
	if f, ok := jsonbody.Present(obj, "filters"); ok && !jsonbody.IsAbsent(f) {
		fo, err := jsonbody.DecodeObject(path+".filters", f)
		if err != nil {
			return nil, err
		}
		if d, ok := jsonbody.Present(fo, "allowed_domains"); ok && !jsonbody.IsAbsent(d) {
			if err := jsonbody.As(path+".filters.allowed_domains", d, &ws.AllowedDomains, "an array of strings"); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range []string{"user_location", "search_context_size"} {
		if v, ok := jsonbody.Present(obj, name); ok && !jsonbody.IsAbsent(v) {
			ws.Unhonoured = append(ws.Unhonoured, "tools."+typ+"."+name)
		}
	}
	return ws, nil
}

// decodeFlatFunction reads a Responses function tool: its fields sit
// beside the type rather than in a function object.
func decodeFlatFunction(path string, obj jsonbody.Object) (Function, error) {
	name, err := jsonbody.RequiredString(obj, path, "name")
	if err != nil {
		return Function{}, err
	}
	if name == "" {
		return Function{}, jsonbody.Errorf(path+".name", "must not be empty")
	}
	f := Function{Name: name}
	if f.Description, err = jsonbody.OptionalString(obj, path, "description"); err != nil {
		return f, err
	}
	if v, ok := jsonbody.Present(obj, "parameters"); ok {
		if _, err := jsonbody.DecodeObject(path+".parameters", v); err != nil {
			return f, err
		}
		f.Parameters = v
	}
	return f, nil
}

func decodeResponseLimits(top jsonbody.Object, req *ResponsesRequest) error {
	v, ok := jsonbody.Present(top, "max_output_tokens")
	if !ok {
		return nil
	}
	n, err := jsonbody.Int("max_output_tokens", v)
	if err != nil {
		return err
	}
	if n < 1 {
		return jsonbody.Errorf("max_output_tokens", "must be at least 1")
	}
	req.MaxTokens = n
	return nil
}

var summaries = []string{"auto", "concise", "detailed"}

func decodeResponseReasoning(top jsonbody.Object, req *ResponsesRequest) error {
	v, ok := jsonbody.Present(top, "reasoning")
	if !ok {
		return nil
	}
	r, err := jsonbody.DecodeObject("reasoning", v)
	if err != nil {
		return err
	}
	req.Reasoning = true
	if req.ReasoningEffort, err = jsonbody.OptionalString(r, "reasoning", "effort"); err != nil {
		return err
	}
	if e := req.ReasoningEffort; e != "" && !slices.Contains(efforts, e) {
		return jsonbody.Errorf("reasoning.effort", "must be one of %s, got %q", strings.Join(efforts, ", "), e)
	}
	for _, key := range []string{"summary", "generate_summary"} {
		s, err := jsonbody.OptionalString(r, "reasoning", key)
		if err != nil {
			return err
		}
		if s != "" && !slices.Contains(summaries, s) {
			return jsonbody.Errorf("reasoning."+key, "must be one of %s, got %q", strings.Join(summaries, ", "), s)
		}
		if s != "" {
			req.ReasoningSummary = s
		}
	}
	return nil
}

// decodeResponseText reads text.format, a response format as in chat
// completions but with the schema's fields beside its type.
func decodeResponseText(top jsonbody.Object, req *ResponsesRequest) error {
	v, ok := jsonbody.Present(top, "text")
	if !ok {
		return nil
	}
	t, err := jsonbody.DecodeObject("text", v)
	if err != nil {
		return err
	}
	if _, ok := jsonbody.Present(t, "verbosity"); ok {
		req.Ignored = append(req.Ignored, "text.verbosity")
	}
	fv, ok := jsonbody.Present(t, "format")
	if !ok {
		return nil
	}
	f, typ, err := typed("text.format", fv)
	if err != nil {
		return err
	}
	rf, more, err := formatType("text.format.type", typ)
	if err != nil || !more {
		req.Format = rf
		return err
	}
	if rf.Name, err = jsonbody.RequiredString(f, "text.format", "name"); err != nil {
		return err
	}
	sv, ok := jsonbody.Present(f, "schema")
	if !ok {
		return jsonbody.Errorf("text.format.schema", "Field required")
	}
	if rf.Schema, err = formatSchema("text.format.schema", sv); err != nil {
		return err
	}
	req.Format = rf
	return nil
}

// decodeResponseState reads what decides where the response lives:
// stream, store, background, previous_response_id and include.
func decodeResponseState(top jsonbody.Object, req *ResponsesRequest) error {
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"stream", &req.Stream}, {"store", &req.Store}, {"background", &req.Background}} {
		if v, ok := jsonbody.Present(top, f.name); ok {
			if err := jsonbody.As(f.name, v, f.dst, "a boolean"); err != nil {
				return err
			}
		}
	}
	if req.Background && !req.Store {
		return jsonbody.Errorf("background", "a background response must be stored: background requires store")
	}
	var err error
	if req.Previous, err = jsonbody.OptionalString(top, "", "previous_response_id"); err != nil {
		return err
	}
	if v, ok := jsonbody.Present(top, "include"); ok {
		var include []string
		if err := jsonbody.As("include", v, &include, "an array of strings"); err != nil {
			return err
		}
		for i, s := range include {
			switch s {
			case "reasoning.encrypted_content":
				req.EncryptedReasoning = true
			case "message.output_text.logprobs":
				return jsonbody.Errorf(jsonbody.Index("include", i), "log probabilities are not available from the claude backend")
			default:
				req.Ignored = append(req.Ignored, "include: "+s)
			}
		}
	}
	if v, ok := jsonbody.Present(top, "parallel_tool_calls"); ok {
		var p bool
		if err := jsonbody.As("parallel_tool_calls", v, &p, "a boolean"); err != nil {
			return err
		}
		req.ParallelToolCalls = &p
	}
	return nil
}

func decodeResponseIdentity(top jsonbody.Object, req *ResponsesRequest) error {
	if err := decodeIdentity(top, &req.Identity); err != nil {
		return err
	}
	if v, ok := jsonbody.Present(top, "client_metadata"); ok {
		if err := jsonbody.As("client_metadata", v, &req.ClientMetadata, "an object"); err != nil {
			return err
		}
	}
	return nil
}

// decodeResponseRefused refuses what the gateway cannot serve at all.
func decodeResponseRefused(top jsonbody.Object, _ *ResponsesRequest) error {
	for _, f := range []struct{ name, why string }{
		{"conversation", "the Conversations API is not served: send previous_response_id or the whole history"},
		{"prompt", "prompt templates are not served: send instructions and input"},
	} {
		if _, ok := jsonbody.Present(top, f.name); ok {
			return jsonbody.Errorf(f.name, "%s", f.why)
		}
	}
	if err := refuseTopLogprobs(top); err != nil {
		return err
	}
	if v, ok := jsonbody.Present(top, "truncation"); ok {
		var t string
		if err := jsonbody.As("truncation", v, &t, "a string"); err != nil {
			return err
		}
		if t != "auto" && t != "disabled" {
			return jsonbody.Errorf("truncation", "must be auto or disabled, got %q", t)
		}
	}
	return nil
}

// responseIgnoredParams are accepted with their type checked, and
// reported. truncation is not among them: the CLI compacts a conversation
// that outgrows the context, which is what "auto" asks for.
var responseIgnoredParams = []ignoredParam{
	{"temperature", "number"},
	{"top_p", "number"},
	{"service_tier", "string"},
	{"max_tool_calls", "number"},
}
