package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/lead"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
	"github.com/meridian-gw/meridian/internal/spawn/runner"
)

// spawnView is a spawn as --json prints it.
type spawnView struct {
	ID           string     `json:"id"`
	ParentID     string     `json:"parent_id,omitempty"`
	Depth        int        `json:"depth"`
	Kind         string     `json:"kind"`
	Status       string     `json:"status"`
	Origin       string     `json:"origin,omitempty"`
	Harness      string     `json:"harness"`
	Model        string     `json:"model,omitempty"`
	Cwd          string     `json:"cwd"`
	Desc         string     `json:"description,omitempty"`
	Error        string     `json:"error,omitempty"`
	ExitCode     int        `json:"exit_code"`
	CostUSD      float64    `json:"cost_usd"`
	InputTokens  int        `json:"input_tokens"`
	OutputTokens int        `json:"output_tokens"`
	DurationMS   int64      `json:"duration_ms"`
	SessionID    string     `json:"session_id,omitempty"`
	RunnerPID    int        `json:"runner_pid,omitempty"`
	Created      time.Time  `json:"created_at"`
	Started      *time.Time `json:"started_at,omitempty"`
	Finished     *time.Time `json:"finished_at,omitempty"`
	Dir          string     `json:"dir"`
	Lookup       string     `json:"lookup"`
	Report       *string    `json:"report,omitempty"`
	// Seen says how the caller consumed a child's result (ack, receipt,
	// clear, show, status, wait, cancel); empty while it is owed or for
	// spawns that are not the caller's children. Only list fills it.
	Seen string `json:"seen,omitempty"`
}

func viewOf(r registry.Row, report string) spawnView {
	v := spawnView{
		ID: r.ID, ParentID: r.ParentID, Depth: r.Depth, Kind: r.Kind, Status: string(r.Status), Origin: string(r.Origin),
		Harness: spawn.Harness, Model: r.Model, Cwd: r.Cwd, Desc: r.Desc, Error: r.Error, ExitCode: r.ExitCode,
		CostUSD: r.CostUSD, InputTokens: r.InTok, OutputTokens: r.OutTok, DurationMS: r.Duration.Milliseconds(),
		SessionID: r.SessionID, RunnerPID: r.RunnerPID, Created: r.Created, Dir: r.Dir, Lookup: spawn.Lookup(r.ID),
	}
	if !r.Started.IsZero() {
		v.Started = &r.Started
	}
	if !r.Finished.IsZero() {
		v.Finished = &r.Finished
	}
	if report != "" {
		v.Report = &report
	}
	return v
}

func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printRows prints summaries, with report bodies when reports is given.
func (sc *spawnContext) printRows(cmd *cobra.Command, rows []registry.Row, reports []string, seen map[string]string) error {
	report := func(i int) string {
		if reports == nil {
			return ""
		}
		return reports[i]
	}
	if sc.json {
		views := make([]spawnView, len(rows))
		for i, r := range rows {
			views[i] = viewOf(r, report(i))
			views[i].Seen = seen[r.ID]
		}
		return printJSON(cmd, map[string]any{"spawns": views})
	}
	out := cmd.OutOrStdout()
	for i, r := range rows {
		s := r.Spawn
		if s.Desc == "" {
			s.Desc = r.Prompt
		}
		fmt.Fprintln(out, spawn.Summary(s))
		if body := report(i); body != "" {
			fmt.Fprintf(out, "\n%s\n\n", indent(strings.TrimRight(body, "\n")))
		}
	}
	return nil
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// printShown prints show's header and report.
func (sc *spawnContext) printShown(cmd *cobra.Command, l *lead.Lead, r registry.Row, report string) error {
	if sc.json {
		return printJSON(cmd, viewOf(r, report))
	}
	out := cmd.OutOrStdout()
	fmt.Fprint(out, spawn.Header(r.Spawn, l.Cwd))
	switch {
	case report != "":
		fmt.Fprintf(out, "\n%s\n", strings.TrimRight(report, "\n"))
	case r.Status.Active():
		fmt.Fprintf(out, "\n(no report yet: the spawn is %s; meridian spawn wait %s)\n", r.Status, r.ID)
	default:
		fmt.Fprintf(out, "\n(no report: see meridian spawn log %s)\n", r.ID)
	}
	return nil
}

func printReport(cmd *cobra.Command, r registry.Row, report string) error {
	if report == "" {
		if r.Status.Active() {
			return fmt.Errorf("%s has no report yet: it is %s", r.ID, r.Status)
		}
		return fmt.Errorf("%s has no report (%s); see meridian spawn log %s", r.ID, r.Status, r.ID)
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", strings.TrimRight(report, "\n"))
	return err
}

// printLog prints the event log: raw JSON lines, or rendered for people.
func printLog(cmd *cobra.Command, r registry.Row, raw bool) error {
	f, err := os.Open(runner.Artifacts(r.Dir).Output())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s has no event log yet (it is %s)", r.ID, r.Status)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	if raw {
		_, err = io.Copy(out, f)
	} else {
		err = lead.RenderLog(f, out)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// cancelView is a spawn after cancel --json.
type cancelView struct {
	spawnView
	AlreadyEnded bool `json:"already_ended"`
}

// waitJSON is what wait --json prints.
type waitJSON struct {
	Spawns     []spawnView `json:"spawns"`
	Pending    []spawnView `json:"pending"`
	OwedSpawns []spawnView `json:"owed_spawns"`
	TimedOut   bool        `json:"timed_out"`
	ExitCode   int         `json:"exit_code"`
}

func waitView(res lead.WaitResult) waitJSON {
	v := waitJSON{Spawns: []spawnView{}, Pending: []spawnView{}, OwedSpawns: []spawnView{}, TimedOut: res.TimedOut, ExitCode: res.ExitCode()}
	for _, f := range res.Runs {
		v.Spawns = append(v.Spawns, viewOf(f.Row, f.Report))
	}
	for _, r := range res.Pending {
		v.Pending = append(v.Pending, viewOf(r, ""))
	}
	for _, r := range res.Owed {
		v.OwedSpawns = append(v.OwedSpawns, viewOf(r, ""))
	}
	return v
}

// terminalOf says whether w is a terminal, and its width in columns.
func terminalOf(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	cols, ok := profile.TerminalWidth(f)
	return ok, cols
}
