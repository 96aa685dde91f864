package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/procident"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// BenchmarkCollectWake runs the built binary's collect against a running
// child and finalizes the child from another process's connection, as its
// worker would. wake-ms is how long collect takes to notice (the target
// is a median of at most 200 ms); delivery-ms is until it has printed the
// delivery, batching window included.
func BenchmarkCollectWake(b *testing.B) {
	bin := buildBinary(b)
	dataDir, project := b.TempDir(), b.TempDir()
	s := newSeeder(b, dataDir, project)
	me, myStart := procident.Self()
	env := []string{"HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH"), "MERIDIAN_DATA_DIR=" + dataDir, "MERIDIAN_LOG_LEVEL=debug"}
	var wakes, deliveries []time.Duration
	for b.Loop() {
		row := s.running(me, myStart)
		cmd := exec.Command(bin, "spawn", "collect")
		cmd.Dir, cmd.Env = project, env
		var out bytes.Buffer
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		lines := bufio.NewScanner(stderr)
		awaitLine(b, lines, "collect: waiting for children")
		// Well into its polling, at a phase that differs run to run.
		time.Sleep(100*time.Millisecond + time.Duration(len(wakes)*7%50)*time.Millisecond)
		finalized := time.Now()
		s.finish(row, spawn.Succeeded)
		awaitLine(b, lines, "collect: children finished")
		wakes = append(wakes, time.Since(finalized))
		_, _ = io.Copy(io.Discard, stderr)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		deliveries = append(deliveries, time.Since(finalized))
		if !strings.Contains(out.String(), `"ids":["`+row.ID+`"]`) {
			b.Fatalf("collect printed %q", out.String())
		}
		if err := s.reg.Consume(context.Background(), s.lead.Project, "", "ack", row.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(testkit.Millis(testkit.Median(wakes)), "wake-ms")
	b.ReportMetric(testkit.Millis(slices.Max(wakes)), "wake-max-ms")
	b.ReportMetric(testkit.Millis(testkit.Median(deliveries)), "delivery-ms")
}

func awaitLine(b *testing.B, sc *bufio.Scanner, want string) {
	b.Helper()
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return
		}
	}
	b.Fatalf("collect never logged %q", want)
}
