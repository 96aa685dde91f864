package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// Through the binary and the real claude: meridian claude -p execs claude
// in its own process, the session is spawn p1, and what it spawns (by
// running meridian by name, not on PATH here) is its child.
func TestClaudePrintSessionIsALead(t *testing.T) {
	t.Parallel()
	w := newSpawnWorld(t, buildBinary(t), testkit.ClaudePath(t), "MERIDIAN_SPAWN_REAP_GRACE=1ms", "MERIDIAN_CONFIG="+filepath.Join(t.TempDir(), "none.toml"))
	w.up.Respond(func(r testkit.Request) testkit.Reply {
		text := r.AllText()
		switch {
		case strings.Contains(text, "task-alpha"):
			return testkit.Reply{Text: "child report"}
		case !strings.Contains(text, `"tool_result"`) && !strings.Contains(string(r.RawBody), `"tool_result"`):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{ID: "toolu_1", Name: "Bash", Input: map[string]any{
				"command":     `echo "$MERIDIAN_SPAWN_ID $MERIDIAN_DEPTH" > lead.txt && meridian spawn -p "task-alpha: a child of the lead"`,
				"description": "spawn a child",
			}}}}
		}
		return testkit.Reply{Text: "spawned it"}
	})
	r := w.run("claude", "-p", "start a child", "--allowedTools", "Bash")
	if r.code != 0 || !strings.Contains(r.out, "spawned it") {
		t.Fatalf("meridian claude -p: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if b, err := os.ReadFile(filepath.Join(w.project, "lead.txt")); err != nil || string(b) != "p1 0\n" {
		t.Fatalf("lead.txt = %q, %v", b, err)
	}
	all := w.until("the child to finish and the session to be reaped", terminal("p1", "p2"))
	lead, child := all["p1"], all["p2"]
	if lead.Kind != "primary" || lead.Status != "succeeded" || lead.Origin != "reconciler" || lead.ParentID != "" {
		t.Fatalf("primary = %+v", lead)
	}
	if child.Kind != "child" || child.ParentID != "p1" || child.Depth != 1 || child.Status != "succeeded" {
		t.Fatalf("child = %+v", child)
	}
	// The lead's children are owed to the lead, not to the project's root,
	// and the primary itself is owed to nobody.
	if d := w.collect(); d.Kind != "empty" {
		t.Fatalf("the root lead was owed %+v", d)
	}
	if d := decodeDelivery(t, w.runEnv([]string{"MERIDIAN_SPAWN_ID=p1"}, "spawn", "collect")); !slices.Equal(d.IDs, []string{"p2"}) {
		t.Fatalf("p1's delivery = %+v", d)
	}
	var v struct{ Spawns []spawnView }
	if err := json.Unmarshal([]byte(w.must("spawn", "list", "--json")), &v); err != nil || len(v.Spawns) != 0 {
		t.Fatalf("the root lead lists %+v (%v)", v.Spawns, err)
	}
}
