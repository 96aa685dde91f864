package agy

import (
	"log/slog"
	"net/http"
	"sync"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/toolhost"
)

// The client's tools reach agy through an MCP server of Meridian's on the
// gateway's own listener (toolhost): agy's model calls them with its
// built-in call_mcp_tool (ServerName "meridian"), agy sends tools/call
// there, and the call is held until the client's result arrives.
const (
	serverName  = "meridian"
	callMCPTool = "call_mcp_tool"
)

// Endpoints serves the sessions' MCP servers (/{token}/mcp) and gates
// (/{token}/gate). It is mounted on the gateway's listener; SetBase says
// where, once the listener's address is known.
type Endpoints struct {
	log *slog.Logger
	mux *http.ServeMux

	hosts *toolhost.Registry

	mu   sync.Mutex
	byID map[string]*endpoint // by token
}

// NewEndpoints returns an empty Endpoints.
func NewEndpoints(log *slog.Logger) *Endpoints {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eps := &Endpoints{log: log, mux: http.NewServeMux(), hosts: toolhost.NewRegistry(), byID: map[string]*endpoint{}}
	eps.mux.HandleFunc("/{token}/mcp", func(w http.ResponseWriter, r *http.Request) {
		eps.hosts.ServeMCP(w, r, r.PathValue("token"))
	})
	eps.mux.HandleFunc("POST /{token}/gate", eps.serveGate)
	eps.mux.HandleFunc("POST /{token}/steer", eps.serveSteer)
	return eps
}

// SetBase is the URL at which agy reaches this handler.
func (eps *Endpoints) SetBase(url string) { eps.hosts.SetBase(url) }

func (eps *Endpoints) base() string {
	if eps == nil {
		return ""
	}
	return eps.hosts.Base()
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
	eps.byID[e.Token] = e
	eps.hosts.Add(e.Host)
}

func (eps *Endpoints) remove(e *endpoint) {
	eps.mu.Lock()
	defer eps.mu.Unlock()
	delete(eps.byID, e.Token)
	eps.hosts.Remove(e.Host)
}

// endpoint is one session's MCP server and gate.
type endpoint struct {
	*toolhost.Host

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

// newEndpoint builds the MCP server for a session's tools.
func newEndpoint(tools []backend.Tool) (*endpoint, error) {
	h, err := toolhost.New(tools, toolhost.Options{Parallel: true})
	if err != nil {
		return nil, err
	}
	return &endpoint{Host: h}, nil
}
