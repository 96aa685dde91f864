package agy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A session with client tools runs with --dangerously-skip-permissions, as
// agy asks nothing headless and would otherwise refuse every MCP call. Its
// only gate is then a PreToolUse hook that asks this driver, for each
// tool, whether it may run: call_mcp_tool to this session's own server,
// for one of its client's tools, and nothing else. The hook is a command
// (Config.GateCommand, `meridian agy-gate`) that reads where to ask from
// gate.json in its folder; whatever keeps it from an answer (the gateway
// gone, the session closed, a bad reply) is a deny, and a hook that cannot
// run at all blocks the call in agy. The gate fails closed.

// gateFile, in a session's .agents folder, tells the hook where to ask.
const gateFile = "gate.json"

// attachmentsFile, in a session's .agents folder, lists the files its
// turns attached (images, documents): view_file may read exactly those.
const attachmentsFile = "attachments.json"

// gateTimeout bounds one question; the hook's own limit in hooks.json is
// above it, so the deny is ours, not a timeout's.
const gateTimeout = 20 * time.Second

type decision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// hookPayload is the part of agy's PreToolUse payload the gate reads.
type hookPayload struct {
	ToolCall struct {
		Name string `json:"name"`
		Args struct {
			ServerName string `json:"ServerName"`
			ToolName   string `json:"ToolName"`
		} `json:"args"`
	} `json:"toolCall"`
}

// decide is the gate's rule.
func (e *endpoint) decide(p hookPayload) decision {
	tc := p.ToolCall
	switch {
	case tc.Name != callMCPTool:
		return decision{Decision: "deny", Reason: fmt.Sprintf("this session runs only its client's tools (through %s on server %q); %s is not one of them", callMCPTool, serverName, tc.Name)}
	case tc.Args.ServerName != serverName:
		return decision{Decision: "deny", Reason: fmt.Sprintf("MCP server %q is not this session's; its client's tools are on %q", tc.Args.ServerName, serverName)}
	case !e.offers(tc.Args.ToolName):
		return decision{Decision: "deny", Reason: fmt.Sprintf("the client offered no tool named %q", tc.Args.ToolName)}
	}
	return decision{Decision: "allow"}
}

// offers reports whether name is a tool of the session's server: one of
// its client's, or the parallel tool.
func (e *endpoint) offers(name string) bool {
	return name != "" && (e.ClientName(name) != "" || name == e.Parallel())
}

func (eps *Endpoints) serveGate(w http.ResponseWriter, r *http.Request) {
	e := eps.lookup(r.PathValue("token"))
	if e == nil {
		http.NotFound(w, r)
		return
	}
	var p hookPayload
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&p); err != nil {
		http.Error(w, "the hook payload is not JSON", http.StatusBadRequest)
		return
	}
	dec := e.decide(p)
	if dec.Decision != "allow" {
		eps.log.Info("agy tool refused by the gate", "tool", p.ToolCall.Name, "server", p.ToolCall.Args.ServerName, "mcp_tool", p.ToolCall.Args.ToolName)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(dec)
}

// writeGateFile tells the hooks of the session in dir where to ask: the
// gate (PreToolUse) and the steering (PreInvocation).
func writeGateFile(dir, base string) error {
	b, _ := json.Marshal(map[string]string{"url": base + "/gate", "steer": base + "/steer"})
	if err := os.WriteFile(filepath.Join(dir, ".agents", gateFile), b, 0o600); err != nil {
		return fmt.Errorf("agy session gate: %w", err)
	}
	return nil
}

// RunGate is the hook command's body: agy's payload on stdin, the answer
// from the gate named in dir's gate.json on stdout. It prints a deny
// whenever it has no answer, and returns the exit code.
func RunGate(ctx context.Context, dir string, stdin io.Reader, stdout io.Writer) int {
	unreachable := decision{Decision: "deny", Reason: "meridian's tool gate could not be reached, so every tool is refused"}
	dec := unreachable
	payload, err := io.ReadAll(io.LimitReader(stdin, 4<<20))
	_, noGate := os.Stat(filepath.Join(dir, gateFile))
	native, decided := nativeDecision(dir, payload)
	// The reason reaches the model, so it names no address or path.
	switch {
	case err != nil:
	case readsAttachment(dir, payload):
		dec = decision{Decision: "allow"}
	case decided:
		dec = native
	case noGate != nil:
		dec = decision{Decision: "deny", Reason: "this session runs no tools of its own; it may read only the files attached to its messages"}
	default:
		if body, ok := ask(ctx, dir, "url", payload); !ok || json.Unmarshal(body, &dec) != nil {
			dec = unreachable
		}
	}
	if dec.Decision != "allow" {
		dec.Decision = "deny"
	}
	b, _ := json.Marshal(dec)
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		return 1 // agy blocks the call when its hook fails
	}
	return 0
}

// RunSteer is the PreInvocation hook's body: before each model call it
// asks the session's endpoint for the steering its client sent beside tool
// results, and prints it as steps for agy to inject; nothing ({}) when
// there is none or no answer. Steering grants nothing, so it fails open.
func RunSteer(ctx context.Context, dir string, stdin io.Reader, stdout io.Writer) int {
	answer := []byte("{}")
	var steps injection
	payload, err := io.ReadAll(io.LimitReader(stdin, 4<<20))
	if body, ok := ask(ctx, dir, "steer", payload); err == nil && ok && json.Unmarshal(body, &steps) == nil && len(steps.InjectSteps) > 0 {
		answer, _ = json.Marshal(steps)
	}
	if _, err := stdout.Write(append(answer, '\n')); err != nil {
		return 1
	}
	return 0
}

// readsAttachment reports a view_file call of a file the session's turns
// attached, named exactly.
func readsAttachment(dir string, payload []byte) bool {
	var p struct {
		ToolCall struct {
			Name string `json:"name"`
			Args struct {
				AbsolutePath string `json:"AbsolutePath"`
			} `json:"args"`
		} `json:"toolCall"`
	}
	if json.Unmarshal(payload, &p) != nil || p.ToolCall.Name != viewFile {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, attachmentsFile))
	var paths []string
	if err != nil || json.Unmarshal(b, &paths) != nil {
		return false
	}
	return slices.Contains(paths, p.ToolCall.Args.AbsolutePath)
}

// ask posts agy's hook payload to the URL gate.json names under key and
// returns the answer's body; ok is false when there is none.
func ask(ctx context.Context, dir, key string, payload []byte) ([]byte, bool) {
	var where map[string]string
	b, err := os.ReadFile(filepath.Join(dir, gateFile))
	if err != nil || json.Unmarshal(b, &where) != nil || where[key] == "" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, gateTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, where[key], bytes.NewReader(payload))
	if err != nil {
		return nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	// Loopback, never through a proxy agy's environment may name.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || err != nil {
		return nil, false
	}
	return body, true
}

// injection is a PreInvocation hook's answer: steps agy adds before the
// model call.
type injection struct {
	InjectSteps []injectedStep `json:"injectSteps,omitempty"`
}

type injectedStep struct {
	UserMessage string `json:"userMessage"`
}

// serveSteer answers a session's PreInvocation hook with the steering
// waiting for it, once.
func (eps *Endpoints) serveSteer(w http.ResponseWriter, r *http.Request) {
	e := eps.lookup(r.PathValue("token"))
	if e == nil {
		http.NotFound(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 4<<20))
	var out injection
	if text := e.takeSteer(); text != "" {
		out.InjectSteps = []injectedStep{{UserMessage: text}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
