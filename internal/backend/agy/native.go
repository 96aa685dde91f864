package agy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend/agy/events"
)

// agy's own tools are denied by every session's gate. An operator may
// grant two of them (--agy-allow): the browser, which then runs in a
// profile of Meridian's (under its data dir, never the user's), and
// subagents, whose workspaces must lie inside the session's guarded
// folders. The grant is written into the session's folder, where agy's
// tools cannot write (they are denied), and the gate reads it there: it
// holds for sessions without client tools too. Everything else stays
// denied. What native work a turn did is reported with its answer.

// Grants agy's own tools may be given.
const (
	GrantBrowser   = "browser"
	GrantSubagents = "subagents"
)

// grantsFile, in a session's .agents folder, holds its grants.
const grantsFile = "grants.json"

// grants are what a session's gate allows of agy's own tools.
type grants struct {
	Allow []string `json:"allow"`
	// Roots are the folders a subagent's workspace must lie in.
	Roots []string `json:"roots"`
}

// CheckGrants reports an unknown grant.
func CheckGrants(allow []string) error {
	for _, a := range allow {
		if a != GrantBrowser && a != GrantSubagents {
			return fmt.Errorf("--agy-allow %q: the grants are %s and %s", a, GrantBrowser, GrantSubagents)
		}
	}
	return nil
}

// writeGrants writes a session's grants.
func writeGrants(dir string, allow, roots []string) error {
	b, _ := json.Marshal(grants{Allow: allow, Roots: roots})
	if err := os.WriteFile(filepath.Join(dir, ".agents", grantsFile), b, 0o600); err != nil {
		return fmt.Errorf("agy session grants: %w", err)
	}
	return nil
}

// browserTool reports one of agy's browser tools.
func browserTool(name string) bool {
	switch name {
	case "open_browser_url", "read_browser_page", "list_browser_pages", "capture_browser_screenshot",
		"capture_browser_console_logs", "click_browser_pixel", "execute_browser_javascript":
		return true
	}
	return strings.HasPrefix(name, "browser_") && name != "browser_subagent"
}

// subagentTool reports one of agy's subagent tools (browser_subagent needs
// the browser too).
func subagentTool(name string) bool {
	switch name {
	case "invoke_subagent", "define_subagent", "manage_subagents", "browser_subagent":
		return true
	}
	return false
}

// nativeDecision is the gate's answer for one of agy's own tools under
// the session's grants; decided is false for a tool no grant concerns.
func nativeDecision(dir string, payload []byte) (dec decision, decided bool) {
	var p struct {
		ToolCall struct {
			Name string `json:"name"`
			Args struct {
				Subagents []struct {
					Workspace string `json:"Workspace"`
				} `json:"Subagents"`
			} `json:"args"`
		} `json:"toolCall"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return decision{}, false
	}
	name := p.ToolCall.Name
	if !browserTool(name) && !subagentTool(name) {
		return decision{}, false
	}
	var g grants
	if b, err := os.ReadFile(filepath.Join(dir, grantsFile)); err == nil {
		_ = json.Unmarshal(b, &g)
	}
	need := []string{GrantBrowser}
	if subagentTool(name) {
		need = []string{GrantSubagents}
		if name == "browser_subagent" {
			need = append(need, GrantBrowser)
		}
	}
	for _, n := range need {
		if !slices.Contains(g.Allow, n) {
			return decision{Decision: "deny", Reason: fmt.Sprintf("%s is off for this session: the gateway's operator has not granted agy's %s", name, n)}, true
		}
	}
	for _, s := range p.ToolCall.Args.Subagents {
		if !within(s.Workspace, g.Roots) {
			return decision{Decision: "deny", Reason: "a subagent may work only inside this session's workspace"}, true
		}
	}
	return decision{Decision: "allow"}, true
}

// within reports a workspace inside one of roots ("" is the session's
// own).
func within(path string, roots []string) bool {
	if path == "" {
		return true
	}
	path = strings.TrimPrefix(path, "file://")
	if !filepath.IsAbs(path) {
		return false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	for _, r := range roots {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			r = real
		}
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// nativeWork lists the turn's own tool steps of agy's, each with what
// became of it: ran, denied (by the gate) or failed. Client tools and
// reads of attachments are not native work.
func nativeWork(tools []events.ToolCall, attached func(json.RawMessage) bool) []string {
	var out []string
	for _, t := range tools {
		switch {
		case t.Name == callMCPTool, t.Name == viewFile && attached(t.Parameters):
			continue
		case t.State == events.StateActive:
			continue
		case t.Error != nil && strings.Contains(t.Error.Message, "denied by pre-tool hook"):
			out = append(out, t.Name+": denied")
		case t.Error != nil:
			out = append(out, t.Name+": failed")
		default:
			out = append(out, t.Name+": ran")
		}
	}
	return out
}
