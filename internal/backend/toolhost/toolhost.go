// Package toolhost serves one session's client tools as an MCP server on
// the gateway's own listener, for a CLI that reaches tools only over MCP
// (agy, codex). A tools/call is held until the client's result for it
// arrives with a later request: the CLI's turn waits inside the call.
// Each session's server is named by a random token in its path, so a
// session reaches only its own tools and nothing else on the machine can
// guess its way in.
package toolhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/meridian-gw/meridian/internal/backend"
)

// mcpSafeName is what a tool may be called as it is (MCP's tool-name
// rule); other names are offered as tool_<i>.
var mcpSafeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// ErrSessionEnded releases a held call whose session ended first.
var ErrSessionEnded = errors.New("the session ended before the client answered")

// Host is one session's MCP server.
type Host struct {
	// Token names the server in its path: {base}/{Token}/mcp.
	Token      string
	clientName map[string]string // MCP name → client name
	offered    []Offered         // in the client's order
	// parallel is the synthetic tool that makes several calls at once,
	// "" when the host offers none.
	parallel string
	handler  http.Handler
	server   *mcp.Server
	// arrivals are tools/call requests on their way to the turn, which
	// hands them to the client; done closes with the session, releasing
	// calls nobody will answer.
	arrivals chan *Call
	done     chan struct{}
	once     sync.Once
}

// Call is one tools/call the CLI made, held until Answer.
type Call struct {
	Name string // the MCP name
	Args json.RawMessage
	// Parts are the client calls a call of the parallel tool makes, each
	// answered on its own; the call itself is answered by the host once
	// all of them are.
	Parts  []*Call
	result chan backend.ToolResult // buffered: one answer
}

// Offered is one client tool as the host offers it.
type Offered struct {
	Name string // the MCP name
	Tool backend.Tool
}

// Options choose what a Host offers beside the client's tools.
type Options struct {
	// Parallel offers a synthetic tool that makes several client calls in
	// one, for a CLI whose model makes one tool call per response.
	Parallel bool
}

// Answer gives the call its result; the held request returns it.
func (c *Call) Answer(r backend.ToolResult) { c.result <- r }

// New builds the MCP server for a session's tools.
func New(tools []backend.Tool, opts Options) (*Host, error) {
	token, err := RandomHex(16)
	if err != nil {
		return nil, err
	}
	h := &Host{Token: token, clientName: make(map[string]string, len(tools)),
		arrivals: make(chan *Call, 16), done: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "meridian-client-tools", Version: "1"}, nil)
	h.server = srv
	for i, t := range tools {
		name := t.Name
		if !mcpSafeName.MatchString(name) {
			name = "tool_" + strconv.Itoa(i)
		}
		if _, dup := h.clientName[name]; dup {
			continue
		}
		h.clientName[name] = t.Name
		h.offered = append(h.offered, Offered{Name: name, Tool: t})
		srv.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: objectSchema(t.InputSchema)}, h.call)
	}
	if opts.Parallel && len(h.offered) > 0 {
		h.addParallel(srv)
	}
	// Stateful, as the CLIs' streamable-HTTP clients need: a session id
	// from initialize and a standing GET stream.
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	h.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseDiscover(w, r) {
			return
		}
		sdk.ServeHTTP(w, r)
	})
	return h, nil
}

// ServeHTTP serves the MCP endpoint.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// Arrivals are the calls the CLI made, in the order they came.
func (h *Host) Arrivals() <-chan *Call { return h.arrivals }

// ClientName is the client's name of the tool the CLI calls name ("" for
// none of this session's).
func (h *Host) ClientName(name string) string { return h.clientName[name] }

// Offered are the client's tools as the host offers them.
func (h *Host) Offered() []Offered { return h.offered }

// call holds a tools/call until the client's result comes, the session
// ends, or the CLI gives up on it.
func (h *Host) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	c := &Call{Name: req.Params.Name, Args: args, result: make(chan backend.ToolResult, 1)}
	if err := h.arrive(ctx, c); err != nil {
		return nil, err
	}
	r, err := h.await(ctx, c)
	if err != nil {
		return nil, err
	}
	return toolResult(r)
}

// arrive hands c to the turn.
func (h *Host) arrive(ctx context.Context, c *Call) error {
	select {
	case h.arrivals <- c:
		return nil
	case <-h.done:
		return ErrSessionEnded
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await waits for c's result.
func (h *Host) await(ctx context.Context, c *Call) (backend.ToolResult, error) {
	select {
	case r := <-c.result:
		return r, nil
	case <-h.done:
		return backend.ToolResult{}, ErrSessionEnded
	case <-ctx.Done():
		return backend.ToolResult{}, ctx.Err()
	}
}

// Close releases held calls and ends the MCP sessions the CLI opened,
// which the SDK would otherwise keep (and a goroutine each) for good.
func (h *Host) Close() {
	h.once.Do(func() {
		close(h.done)
		for ss := range h.server.Sessions() {
			_ = ss.Close()
		}
	})
}

// toolResult is the client's answer in MCP's shape.
func toolResult(r backend.ToolResult) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(map[string]any{"content": r.MCPContent(), "isError": r.IsError})
	if err != nil {
		return nil, err
	}
	out := &mcp.CallToolResult{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("tool result: %w", err)
	}
	return out, nil
}

// objectSchema is a tool's input schema as MCP takes it: an object
// schema. A client's schema without a type is given one; one of another
// type (which no API accepts) becomes any object, and the gateway still
// checks calls against the client's own.
func objectSchema(raw json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	switch m["type"] {
	case "object":
		return raw
	case nil:
		m["type"] = "object"
		if b, err := json.Marshal(m); err == nil {
			return b
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// refuseDiscover answers server/discover as a server of the previous
// protocol would, with "method not found": that is the answer after which
// agy was seen to fall back to initialize; what it does with a discover
// result is not known.
func refuseDiscover(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, "could not read the request", http.StatusBadRequest)
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "server/discover" {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
		"error": map[string]any{"code": -32601, "message": "method not found: server/discover"}})
	_, _ = w.Write(b)
	return true
}

// RandomHex is n random bytes in hex: tokens and tool-call ids.
func RandomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Registry is where the sessions' servers are mounted: /{token}/mcp on
// a prefix of the gateway's listener, whose URL SetBase gives once the
// listener's address is known.
type Registry struct {
	mu      sync.Mutex
	url     string
	byToken map[string]*Host
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{byToken: map[string]*Host{}} }

// SetBase is the URL at which the CLIs reach this registry's handler.
func (g *Registry) SetBase(url string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.url = strings.TrimSuffix(url, "/")
}

// Base is that URL ("" before SetBase, or for a nil registry).
func (g *Registry) Base() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.url
}

// URL is where a CLI reaches h's MCP server.
func (g *Registry) URL(h *Host) string { return g.Base() + "/" + h.Token + "/mcp" }

// Add mounts h; Remove unmounts it.
func (g *Registry) Add(h *Host) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byToken[h.Token] = h
}

// Remove unmounts h.
func (g *Registry) Remove(h *Host) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byToken, h.Token)
}

// Lookup is the server mounted under token, nil for none.
func (g *Registry) Lookup(token string) *Host {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byToken[token]
}

// ServeMCP serves /{token}/mcp for the mounted servers.
func (g *Registry) ServeMCP(w http.ResponseWriter, r *http.Request, token string) {
	h := g.Lookup(token)
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// ServeHTTP serves /{token}/mcp, the registry mounted under its prefix.
func (g *Registry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if rest != "mcp" {
		http.NotFound(w, r)
		return
	}
	g.ServeMCP(w, r, token)
}
