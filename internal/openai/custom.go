package openai

import (
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/jsonbody"
)

// A custom (freeform) tool takes one text input instead of JSON
// arguments. The model is offered it as a tool of one string property,
// "input"; its calls reach the client as custom calls carrying that text,
// and the client's custom calls in its history become calls of that
// argument again.

// customSchema is a custom tool's input as the model sees it.
func customSchema(grammar string) json.RawMessage {
	desc := "The tool's whole input, as free text."
	if grammar != "" {
		desc += " It must be written in this grammar: " + grammar
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "required": []string{"input"}, "additionalProperties": false,
		"properties": map[string]any{"input": map[string]any{"type": "string", "description": desc}}})
	return b
}

// decodeCustomTool reads a custom tool: {"custom": {"name", "description",
// "format"}} on Chat, the same fields beside "type" on Responses (obj).
func decodeCustomTool(path string, obj jsonbody.Object) (Function, error) {
	name, err := jsonbody.RequiredString(obj, path, "name")
	if err != nil {
		return Function{}, err
	}
	if name == "" {
		return Function{}, jsonbody.Errorf(path+".name", "must not be empty")
	}
	f := Function{Name: name, Custom: true}
	if f.Description, err = jsonbody.OptionalString(obj, path, "description"); err != nil {
		return Function{}, err
	}
	grammar := ""
	if v, ok := jsonbody.Present(obj, "format"); ok {
		fo, err := jsonbody.DecodeObject(path+".format", v)
		if err != nil {
			return Function{}, err
		}
		typ, err := jsonbody.RequiredString(fo, path+".format", "type")
		if err != nil {
			return Function{}, err
		}
		switch typ {
		case "text":
		case "grammar":
			g, ok := jsonbody.Present(fo, "grammar")
			if !ok {
				return Function{}, jsonbody.Errorf(path+".format.grammar", "Field required")
			}
			var gr struct {
				Definition string `json:"definition"`
				Syntax     string `json:"syntax"`
			}
			if json.Unmarshal(g, &gr) != nil || gr.Definition == "" {
				return Function{}, jsonbody.Errorf(path+".format.grammar", "expected {\"definition\": …, \"syntax\": \"lark\" or \"regex\"}")
			}
			grammar = strings.TrimSpace(gr.Syntax + " grammar:\n" + gr.Definition)
		default:
			return Function{}, jsonbody.Errorf(path+".format.type", "must be text or grammar")
		}
	}
	f.Parameters = customSchema(grammar)
	return f, nil
}

// customArguments are a custom call's input as the model's arguments.
func customArguments(input string) string {
	b, _ := json.Marshal(map[string]string{"input": input})
	return string(b)
}

// customInput is the text of a custom call's arguments.
func customInput(args []byte) string {
	var v struct {
		Input string `json:"input"`
	}
	_ = json.Unmarshal(args, &v)
	return v.Input
}

// Customs names a request's custom tools.
func customs(fns []Function) map[string]bool {
	var out map[string]bool
	for _, f := range fns {
		if f.Custom {
			if out == nil {
				out = map[string]bool{}
			}
			out[f.Name] = true
		}
	}
	return out
}

// decodeCustomCall reads a Chat custom call: {"custom": {"name", "input"}}.
func decodeCustomCall(path string, obj jsonbody.Object, c *ToolCall) error {
	cv, ok := jsonbody.Present(obj, "custom")
	if !ok {
		return jsonbody.Errorf(path+".custom", "Field required")
	}
	co, err := jsonbody.DecodeObject(path+".custom", cv)
	if err != nil {
		return err
	}
	if c.Name, err = jsonbody.RequiredString(co, path+".custom", "name"); err != nil {
		return err
	}
	input, err := jsonbody.OptionalString(co, path+".custom", "input")
	if err != nil {
		return err
	}
	c.Arguments, c.Custom = customArguments(input), true
	return nil
}

// Customs names the request's custom tools (nil for none).
func (r *ChatRequest) Customs() map[string]bool { return customs(r.Tools) }

// customCallItem is a custom_tool_call item as the Responses API shows it,
// in a response's output and in its input items.
type customCallItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
}
