// Package codexschema is the protocol of `codex app-server` as the pinned
// codex CLI states it: the JSON Schema bundle its `app-server
// generate-json-schema` writes (scripts/codex-version's version),
// recorded here and checked against the binary by the tests. The codex
// backend and its stand-ins check the messages they write against it
// rather than against what someone remembered of the protocol.
package codexschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Version is the codex CLI the bundle was recorded from.
const Version = "0.171.0"

// BundleFile is the bundle's name as the CLI writes it.
const BundleFile = "codex_app_server_protocol.schemas.json"

//go:embed codex_app_server_protocol.schemas.json
var bundle []byte

// Bundle is the recorded bundle, as the CLI wrote it.
func Bundle() []byte { return slices.Clone(bundle) }

// Kind is a kind of message on the app-server's stdio.
type Kind string

// Kinds, named as the bundle's definitions.
const (
	ClientRequest      Kind = "ClientRequest"      // client → codex, with an id
	ClientNotification Kind = "ClientNotification" // client → codex, no id
	ServerNotification Kind = "ServerNotification" // codex → client, no id
	ServerRequest      Kind = "ServerRequest"      // codex → client, answered by id
)

// Protocol is the compiled bundle.
type Protocol struct {
	kinds   map[Kind]*jsonschema.Schema
	methods map[Kind][]string
}

// Load compiles the recorded bundle.
func Load() (*Protocol, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(bundle))
	if err != nil {
		return nil, fmt.Errorf("codexschema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // nothing is fetched
	const loc = "meridian:codex-app-server.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("codexschema: %w", err)
	}
	p := &Protocol{kinds: map[Kind]*jsonschema.Schema{}, methods: map[Kind][]string{}}
	var raw struct {
		Definitions map[Kind]struct {
			OneOf []struct {
				Properties struct {
					Method struct {
						Enum []string `json:"enum"`
					} `json:"method"`
				} `json:"properties"`
			} `json:"oneOf"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(bundle, &raw); err != nil {
		return nil, fmt.Errorf("codexschema: %w", err)
	}
	for _, k := range []Kind{ClientRequest, ClientNotification, ServerNotification, ServerRequest} {
		s, err := c.Compile(loc + "#/definitions/" + string(k))
		if err != nil {
			return nil, fmt.Errorf("codexschema: %s: %w", k, err)
		}
		p.kinds[k] = s
		for _, v := range raw.Definitions[k].OneOf {
			p.methods[k] = append(p.methods[k], v.Properties.Method.Enum...)
		}
	}
	return p, nil
}

// Methods are the methods of a kind of message, in the bundle's order.
func (p *Protocol) Methods(k Kind) []string { return slices.Clone(p.methods[k]) }

// Has reports whether the protocol has a method of that kind.
func (p *Protocol) Has(k Kind, method string) bool { return slices.Contains(p.methods[k], method) }

// Check reports why line, one message as written on the stdio, is not a
// message of that kind. The app-server's framing has no "jsonrpc"
// member, and codex adds "emittedAtMs" to what it writes: both are
// taken off before the check.
func (p *Protocol) Check(k Kind, line []byte) error {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if _, ok := msg["jsonrpc"]; ok {
		return fmt.Errorf("the app-server's messages carry no \"jsonrpc\" member")
	}
	delete(msg, "emittedAtMs")
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	s, ok := p.kinds[k]
	if !ok {
		return fmt.Errorf("no kind %q", k)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("not a %s of codex %s: %s", k, Version, strings.TrimSpace(err.Error()))
	}
	return nil
}
