package agy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/meridian-gw/meridian/internal/backend"
)

// The client's tools reach agy through an MCP server of Meridian's on the
// gateway's own listener: agy's model calls them with its built-in
// call_mcp_tool (ServerName "meridian"), agy sends tools/call there, and
// the call is held until the client's result arrives. One endpoint per
// session, named by a random token in its path, so a session reaches only
// its own tools and nothing else on the machine can guess its way in.
const (
	serverName  = "meridian"
	callMCPTool = "call_mcp_tool"
)

// mcpSafeName is what a tool may be called as it is (MCP's tool-name
// rule); other names are offered as tool_<i>.
var mcpSafeName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Endpoints serves the sessions' MCP servers (/{token}/mcp) and gates
// (/{token}/gate). It is mounted on the gateway's listener; SetBase says
// where, once the listener's address is known.
type Endpoints struct {
	log *slog.Logger
	mux *http.ServeMux

	mu   sync.Mutex
	url  string
	byID map[string]*endpoint // by token
}

// NewEndpoints returns an empty Endpoints.
func NewEndpoints(log *slog.Logger) *Endpoints {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eps := &Endpoints{log: log, mux: http.NewServeMux(), byID: map[string]*endpoint{}}
	eps.mux.HandleFunc("/{token}/mcp", func(w http.ResponseWriter, r *http.Request) {
		e := eps.lookup(r.PathValue("token"))
		if e == nil {
			http.NotFound(w, r)
			return
		}
		e.handler.ServeHTTP(w, r)
	})
	eps.mux.HandleFunc("POST /{token}/gate", eps.serveGate)
	eps.mux.HandleFunc("POST /{token}/steer", eps.serveSteer)
	return eps
}

// SetBase is the URL at which agy reaches this handler.
func (eps *Endpoints) SetBase(url string) {
	eps.mu.Lock()
	defer eps.mu.Unlock()
	eps.url = strings.TrimSuffix(url, "/")
}

func (eps *Endpoints) base() string {
	if eps == nil {
		return ""
	}
	eps.mu.Lock()
	defer eps.mu.Unlock()
	return eps.url
}

func (eps *Endpoints) ServeHTTP(w http.ResponseWriter, r *http.Request) { eps.mux.ServeHTTP(w, r) }

func (eps *Endpoints) lookup(token string) *endpoint {
	eps.mu.Lock()
	defer eps.mu.Unlock()
	return eps.byID[token]
}

func (eps *Endpoints) add(e *endpoint) {
	eps.mu.Lock()
	defer eps.mu.Unlock()
	eps.byID[e.token] = e
}

func (eps *Endpoints) remove(e *endpoint) {
	eps.mu.Lock()
	defer eps.mu.Unlock()
	delete(eps.byID, e.token)
}

// endpoint is one session's MCP server and gate.
type endpoint struct {
	token      string
	clientName map[string]string // MCP name → client name
	handler    http.Handler      // the session's streamable-HTTP MCP server
	server     *mcp.Server
	// arrivals are tools/call requests on their way to the turn, which
	// emits them to the client; done closes with the session, releasing
	// calls nobody will answer.
	arrivals chan *mcpCall
	done     chan struct{}

	// steer is what the client sent beside its tool results, waiting for
	// the model's next call (the PreInvocation hook takes it).
	mu    sync.Mutex
	steer string
}

// setSteer leaves text for the model's next call.
func (e *endpoint) setSteer(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steer = text
}

// takeSteer hands the waiting steering over, once.
func (e *endpoint) takeSteer() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	text := e.steer
	e.steer = ""
	return text
}

// mcpCall is one tools/call agy made: held until result gets the
// client's answer.
type mcpCall struct {
	name   string // the MCP name
	args   json.RawMessage
	result chan backend.ToolResult // buffered: one answer
}

// newEndpoint builds the MCP server for a session's tools.
func newEndpoint(tools []backend.Tool) (*endpoint, error) {
	token, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	e := &endpoint{token: token, clientName: make(map[string]string, len(tools)),
		arrivals: make(chan *mcpCall, 16), done: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "meridian-client-tools", Version: "1"}, nil)
	e.server = srv
	for i, t := range tools {
		name := t.Name
		if !mcpSafeName.MatchString(name) {
			name = "tool_" + strconv.Itoa(i)
		}
		if _, dup := e.clientName[name]; dup {
			continue
		}
		e.clientName[name] = t.Name
		srv.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: objectSchema(t.InputSchema)}, e.call)
	}
	// Stateful, as agy's streamable-HTTP client needs: a session id from
	// initialize and a standing GET stream.
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	e.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseDiscover(w, r) {
			return
		}
		sdk.ServeHTTP(w, r)
	})
	return e, nil
}

// call holds a tools/call until the client's result comes, the session
// ends, or agy gives up on it.
func (e *endpoint) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	c := &mcpCall{name: req.Params.Name, args: args, result: make(chan backend.ToolResult, 1)}
	select {
	case e.arrivals <- c:
	case <-e.done:
		return nil, errSessionEnded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-c.result:
		return toolResult(r)
	case <-e.done:
		return nil, errSessionEnded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close releases held calls and ends the MCP sessions agy opened, which
// the SDK would otherwise keep (and a goroutine each) for good.
func (e *endpoint) close() {
	close(e.done)
	for ss := range e.server.Sessions() {
		_ = ss.Close()
	}
}

var errSessionEnded = errors.New("the session ended before the client answered")

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

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
