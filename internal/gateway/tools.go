package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/schemacheck"
)

// clientTools are the tools a request offers, which the client executes.
// Their schemas are compiled when a call needs checking, from the request
// alone: references to other documents are never fetched.
type clientTools struct {
	list    []backend.Tool
	schemas map[string]json.RawMessage
	checked map[string]*schemacheck.Schema
	broken  map[string]error
}

// toolsOf reads the request's tools. Tools the API itself runs (web search
// and the like, marked by a type) cannot be client tools; they are named
// in ignored.
func toolsOf(req *anthropic.MessagesRequest) (ct *clientTools, ignored []string) {
	ct = &clientTools{schemas: map[string]json.RawMessage{}}
	for _, raw := range req.Tools {
		var t struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		_ = json.Unmarshal(raw, &t) // the decoder checked the shape
		if t.Type != "" && t.Type != "custom" {
			ignored = append(ignored, t.Name)
			continue
		}
		if _, dup := ct.schemas[t.Name]; dup {
			continue
		}
		ct.list = append(ct.list, backend.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		ct.schemas[t.Name] = t.InputSchema
	}
	return ct, ignored
}

// validate checks a call's arguments against its tool's schema. A schema
// that cannot be compiled checks nothing: the client's own tool decides.
func (ct *clientTools) validate(name string, input json.RawMessage) error {
	schema, ok := ct.schemas[name]
	if !ok {
		return fmt.Errorf("no tool named %q", name)
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	sch, err := ct.compiled(name, schema)
	if err != nil {
		return nil
	}
	if !json.Valid(input) {
		return fmt.Errorf("arguments are not valid JSON")
	}
	if err := sch.Check(input); err != nil {
		return fmt.Errorf("arguments do not match the input schema of %s: %s", name, err)
	}
	return nil
}

func (ct *clientTools) compiled(name string, schema json.RawMessage) (*schemacheck.Schema, error) {
	if sch := ct.checked[name]; sch != nil {
		return sch, nil
	}
	if err := ct.broken[name]; err != nil {
		return nil, err
	}
	sch, err := schemacheck.Compile(schema)
	if err != nil {
		if ct.broken == nil {
			ct.broken = map[string]error{}
		}
		ct.broken[name] = err
		return nil, err
	}
	if ct.checked == nil {
		ct.checked = map[string]*schemacheck.Schema{}
	}
	ct.checked[name] = sch
	return sch, nil
}
