package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/meridian-gw/meridian/internal/procmem"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// benchTurns is how many turns each benchmark conversation has; turns
// 2..benchTurns are measured.
const benchTurns = 6

// BenchmarkCodexTurns measures, side by side in one run, a live turn on
// codex through meridian (--backend codex: the conversation's app-server
// holds its thread), a live turn on claude through meridian, and codex
// run bare per turn (`codex exec`, then `codex exec resume --last`: a new
// process that loads the thread each turn), every upstream a loopback
// fake answering at once. It reports each median turn, the live codex
// turn as a share of the bare one, and the idle cost of a live codex: its
// proportional memory and its CPU while it waits.
func BenchmarkCodexTurns(b *testing.B) {
	path := testkit.CodexPath(b)
	cx := unstartedCodexGateway(b)
	cx.start("--backend", "codex", "--codex-path", path, "--spares", "0")
	cl := newGateway(b)
	cl.up.Always(testkit.Reply{Text: "answer"})
	cl.start("--spares", "0")

	up := testkit.NewResponsesUpstream(b, "answer")
	home := testkit.CodexHome(b, up.URL, "gpt-test")
	bare := func(dir string, turn int) time.Duration {
		args := []string{"exec", "--skip-git-repo-check", "-s", "read-only"}
		if turn > 1 {
			args = append(args, "resume", "--last")
		}
		cmd := exec.Command(path, append(args, fmt.Sprintf("question %d", turn))...)
		cmd.Dir, cmd.Env = dir, []string{"HOME=" + dir, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH")}
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("codex exec: %v: %s", err, out)
		}
		return time.Since(start)
	}

	var liveCodex, liveClaude, bareCodex []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		liveCodex = append(liveCodex, conversation(b, cx.gatewayProc, fmt.Sprintf("codex-%d", i), "gpt-test")[1:]...)
		liveClaude = append(liveClaude, conversation(b, cl, fmt.Sprintf("claude-%d", i), "claude-sonnet-4-5")[1:]...)
		dir := b.TempDir()
		for turn := 1; turn <= benchTurns; turn++ {
			if d := bare(dir, turn); turn > 1 {
				bareCodex = append(bareCodex, d)
			}
		}
	}
	b.StopTimer()
	lc, ll, bc := medianOf(liveCodex), medianOf(liveClaude), medianOf(bareCodex)
	b.ReportMetric(float64(lc.Microseconds())/1000, "codex-live-turn-p50-ms")
	b.ReportMetric(float64(ll.Microseconds())/1000, "claude-live-turn-p50-ms")
	b.ReportMetric(float64(bc.Microseconds())/1000, "codex-exec-per-turn-p50-ms")
	b.ReportMetric(float64(lc)/float64(bc), "live-share-of-bare")

	pids := cx.codexes()
	if len(pids) == 0 {
		b.Fatal("no live codex to measure")
	}
	var pss int64
	for _, pid := range pids {
		n, _ := procmem.Process(pid)
		pss += n
	}
	b.ReportMetric(float64(pss)/float64(len(pids))/(1<<20), "codex-idle-pss-MiB-per-process")
	// Its CPU while it waits, per ten seconds (MERIDIAN_BENCH_IDLE
	// seconds watched, 10 by default).
	idle := 10 * time.Second
	if n, err := strconv.Atoi(os.Getenv("MERIDIAN_BENCH_IDLE")); err == nil && n > 0 {
		idle = time.Duration(n) * time.Second
	}
	before, _ := procmem.CPU(pids[0])
	time.Sleep(idle)
	after, _ := procmem.CPU(pids[0])
	b.ReportMetric(float64((after-before).Microseconds())/1000*float64(10*time.Second)/float64(idle), "codex-idle-cpu-ms-per-10s")
}

// conversation runs benchTurns turns of one conversation on the Messages
// API and returns each turn's time.
func conversation(b *testing.B, g *gatewayProc, id, model string) []time.Duration {
	client := g.anthropic(id)
	var msgs []sdk.MessageParam
	var took []time.Duration
	for turn := 1; turn <= benchTurns; turn++ {
		msgs = append(msgs, sdk.NewUserMessage(sdk.NewTextBlock(fmt.Sprintf("question %d", turn))))
		start := time.Now()
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: 100, Messages: msgs})
		if err != nil {
			b.Fatalf("%s turn %d: %v", id, turn, err)
		}
		took = append(took, time.Since(start))
		msgs = append(msgs, msg.ToParam())
	}
	return took
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
