// Package schemacheck checks JSON values against JSON Schemas that arrive in
// requests (tool input schemas, response formats). A schema is compiled
// from the request alone: references to other documents are never
// fetched, and values are checked as they are, without coercion. It is pure.
package schemacheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema is a compiled schema.
type Schema struct{ s *jsonschema.Schema }

// Compile compiles a schema document; the draft defaults to 2020-12.
func Compile(schema json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme: nothing is ever fetched
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "meridian:request-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	return &Schema{s: s}, nil
}

// Check reports why value, a JSON document, does not match the schema.
func (s *Schema) Check(value []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if err := s.s.Validate(inst); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	return nil
}
