package e2e

import (
	"bufio"
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The real OpenCode, set up by `meridian setup opencode` (its plugin and
// the provider's stored credential), behind a hop that breaks the main
// agent's stream part way: after its first text, and in a second turn in
// the middle of a tool call, which the plugin holds back until the stream
// ends whole. The plugin's fetch asks Meridian for the saved answer only
// (Cache-Control: only-if-cached) and passes on the rest, so OpenCode shows
// the whole answer once, runs the tool once, the turn reaches the upstream
// once, and OpenCode never sends the request again on its own.
func TestOpenCodeRecoversABrokenStream(t *testing.T) {
	t.Parallel()
	opencode := testkit.OpenCodePath(t)
	g := newGateway(t)
	answer := []string{"The first part of the answer arrives. ", "The second part follows it, ", "and the end closes it."}
	main := func(r testkit.Request, marker string) bool {
		return strings.Contains(r.AllText(), marker) && !strings.Contains(strings.ToLower(r.SystemText()), "title")
	}
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		switch {
		case main(r, "CUT_TOOL") && testkit.LastIsToolResult(r):
			return testkit.Reply{Text: "The run is recorded."}
		case main(r, "CUT_TOOL"):
			return testkit.Reply{Chunks: []string{"Recording the run now. "}, ToolUses: []testkit.ToolUse{{ID: "toolu_oc1", Name: "mcp__c__bash",
				Input: map[string]any{"command": "echo ran >> ran.txt", "description": "record a run"}}}}
		case main(r, "CUT_ONCE"):
			return testkit.Reply{Chunks: answer}
		}
		return testkit.Reply{Text: "A short title"}
	})
	g.start("--spares", "0")
	faultproxy := filepath.Join(t.TempDir(), "faultproxy")
	if out, err := exec.Command("go", "build", "-o", faultproxy, "../testkit/faultproxy").CombinedOutput(); err != nil {
		t.Fatalf("build faultproxy: %v\n%s", err, out)
	}
	home, project := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	if out, err := exec.Command("git", "-C", project, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}

	// turn runs OpenCode once behind a hop that breaks the stream of the
	// request holding marker after the first event holding breakAt, and
	// checks that the request was sent once more, only-if-cached, and ran
	// upstream once. It returns what OpenCode printed.
	turn := func(marker, breakAt string) string {
		t.Helper()
		proxy := exec.Command(faultproxy, "-target", g.url, "-cut", marker, "-only", "X-Opencode-Agent-Name=build", "-partial", breakAt)
		stdout, _ := proxy.StdoutPipe()
		var proxyLog testkit.Log
		proxy.Stderr = &proxyLog
		if err := proxy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = proxy.Process.Kill(); _ = proxy.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("faultproxy: %v", err)
		}
		proxyURL, _ := url.Parse(strings.TrimSpace(line))
		setup := exec.Command(g.bin, "setup", "opencode", "--set-default", "--port", proxyURL.Port())
		setup.Env = env
		if out, err := setup.CombinedOutput(); err != nil {
			t.Fatalf("meridian setup opencode: %v\n%s", err, out)
		}
		for _, f := range []string{".config/opencode/plugin/meridian.ts", ".local/share/opencode/auth.json"} {
			if _, err := os.Stat(filepath.Join(home, f)); err != nil {
				t.Fatalf("setup did not write %s: %v", f, err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		run := exec.CommandContext(ctx, opencode, "run", marker+": go on")
		run.Dir = project
		run.Env = append(env, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
		out, err := run.CombinedOutput()
		t.Logf("%s: opencode run: %s\nfaultproxy:\n%s", marker, out, proxyLog.String())
		if err != nil {
			t.Fatalf("opencode run: %v", err)
		}
		cut := regexp.MustCompile(`cut POST /v1/messages id="([^"]+)": meridian answered 200 \(\d+ bytes\), the client got [1-9]\d*`).FindStringSubmatch(proxyLog.String())
		if cut == nil {
			t.Fatalf("%s: the hop did not break a stream part way", marker)
		}
		again := regexp.MustCompile(`passed POST /v1/messages id="`+regexp.QuoteMeta(cut[1])+`" cache="([^"]*)"`).FindAllStringSubmatch(proxyLog.String(), -1)
		if len(again) != 1 || again[0][1] != "only-if-cached" {
			t.Fatalf("%s: after the break the request was sent again %d times (%v), want once, only-if-cached", marker, len(again), again)
		}
		ran := 0
		for _, r := range g.up.Requests() {
			if main(r, marker) && !testkit.LastIsToolResult(r) {
				ran++
			}
		}
		if ran != 1 {
			t.Fatalf("%s: the broken turn reached the upstream %d times", marker, ran)
		}
		return string(out)
	}

	if out := turn("CUT_ONCE", `"text_delta"`); strings.Count(out, strings.Join(answer, "")) != 1 {
		t.Fatalf("OpenCode did not show the whole answer once")
	}
	if out := turn("CUT_TOOL", `"input_json_delta"`); !strings.Contains(out, "The run is recorded.") {
		t.Fatalf("the turn with a tool call did not end")
	}
	if runs, err := os.ReadFile(filepath.Join(project, "ran.txt")); err != nil || string(runs) != "ran\n" {
		t.Fatalf("the tool ran %q (%v), want once", runs, err)
	}
	if !g.logShows("answered from a saved answer") {
		t.Fatal("meridian did not answer the recoveries from saved answers")
	}
}
