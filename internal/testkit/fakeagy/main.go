// Command fakeagy stands in for Antigravity's agy CLI in tests, which
// cannot install the real one. It follows agy's observed behaviour — Go
// flag parsing, `--version`, `models`, print-mode commands, one-shot and
// persistent stream-json sessions, conversations kept under $HOME and
// resumed by --conversation, PreToolUse hooks from --add-dir folders,
// headless soft-deny, the failure texts and exit codes, signals — driven
// by a scenario file (FAKE_AGY_SCENARIO), and writes what it was asked to
// a call log (FAKE_AGY_LOG) for the test to check.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// options are agy's root flags that matter here.
type options struct {
	print, outputFormat, inputFormat, model, effort, conversation, printTimeout, mode, logFile, jsonSchema string
	addDirs                                                                                                []string
	skipPermissions, sandbox, disableSlash, version                                                        bool
}

type dirs []string

func (d *dirs) String() string     { return strings.Join(*d, ",") }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	log := openCallLog()
	log.write(map[string]any{"argv": args, "cwd": cwd(), "env": selectedEnv()})
	var o options
	fs := flag.NewFlagSet("agy", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() { fmt.Fprintln(os.Stderr, "Usage of agy:"); fs.PrintDefaults() }
	fs.StringVar(&o.print, "p", "", "Run a single prompt non-interactively and print the response")
	fs.StringVar(&o.print, "print", "", "Run a single prompt non-interactively and print the response")
	fs.StringVar(&o.outputFormat, "output-format", "text", "Output format for print mode")
	fs.StringVar(&o.inputFormat, "input-format", "text", "stream-json reads one NDJSON message per line from stdin")
	fs.StringVar(&o.model, "model", "", "Model for the current CLI session")
	fs.StringVar(&o.effort, "effort", "", "Reasoning effort for the current CLI session")
	fs.StringVar(&o.conversation, "conversation", "", "Resume a previous conversation by ID")
	fs.StringVar(&o.printTimeout, "print-timeout", "0s", "Print timeout")
	fs.StringVar(&o.mode, "mode", "", "Agent execution mode")
	fs.StringVar(&o.logFile, "log-file", "", "Override CLI log file path")
	fs.StringVar(&o.jsonSchema, "json-schema", "", "JSON schema (a JSON string or a file path) to enforce structured output")
	fs.Var((*dirs)(&o.addDirs), "add-dir", "Add a directory to the workspace")
	fs.BoolVar(&o.skipPermissions, "dangerously-skip-permissions", false, "Auto-approve all tool permission requests")
	fs.BoolVar(&o.sandbox, "sandbox", false, "Run in a sandbox")
	fs.BoolVar(&o.disableSlash, "disable-slash-commands", false, "Disable slash commands in print mode")
	fs.BoolVar(&o.version, "version", false, "Print the version")
	fs.BoolVar(&o.version, "v", false, "Print the version")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	sc, err := loadScenario()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagy:", err)
		return 1
	}
	switch {
	case o.version:
		fmt.Println(sc.Version)
		return 0
	case fs.NArg() > 0 && fs.Arg(0) == "models":
		return models(sc, o, fs.Args()[1:])
	}
	out := newWriter(os.Stdout)
	if sc.SignedOut {
		fmt.Fprintln(os.Stderr, "Authentication required. Please visit the URL to log in:")
		fmt.Fprintln(os.Stderr, "Error: authentication timed out.")
		out.result(o.outputFormat, failedResult("authentication failed or timed out"))
		return 1
	}
	if msg := checkModel(sc, o.model, o.effort); msg != "" {
		out.result(o.outputFormat, failedResult(msg))
		return 1
	}
	if o.print != "" {
		return printMode(sc, o, out)
	}
	if o.inputFormat == "stream-json" {
		if o.outputFormat != "stream-json" {
			fmt.Fprintln(os.Stderr, "Error: --input-format stream-json requires --output-format stream-json")
			return 1
		}
		s := newSession(sc, o, out, log)
		return s.run(os.Stdin)
	}
	fmt.Fprintln(os.Stderr, "fakeagy: the interactive terminal is not simulated")
	return 1
}

// models answers `agy models`: a banner on stderr, id<TAB>label rows.
func models(sc *scenario, o options, rest []string) int {
	if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		fmt.Println("Usage: agy models [flags]")
		fmt.Printf("Error: flags provided but not defined: %s\n", strings.SplitN(rest[0], "=", 2)[0][1:])
		return 1
	}
	fmt.Fprintln(os.Stderr, "Fetching available models...")
	if sc.ModelsStall > 0 && countRun("models") <= sc.ModelsStall {
		select {}
	}
	if sc.SignedOut {
		fmt.Fprintln(os.Stderr, "Error: Please sign in to view available models. Launch the CLI without arguments to sign in.")
		return 1
	}
	var tsv strings.Builder
	for _, m := range sc.Models {
		fmt.Fprintf(&tsv, "%s\t%s\n", m.ID, m.Label)
	}
	if o.outputFormat == "text" {
		fmt.Print(tsv.String())
		return 0
	}
	cmd := map[string]any{"name": "models", "data": map[string]any{"models": sc.Models}}
	commandAnswer(newWriter(os.Stdout), o.outputFormat, cmd, tsv.String())
	return 0
}

// printMode runs -p: a slash command answered by the CLI itself, or one
// turn of a new (or resumed) conversation.
func printMode(sc *scenario, o options, out *writer) int {
	if strings.HasPrefix(o.print, "/") && !o.disableSlash {
		name := strings.Fields(o.print[1:])[0]
		switch name {
		case "usage", "quota":
			data := sc.Usage
			if data == nil {
				data = json.RawMessage(`{}`)
			}
			commandAnswer(out, o.outputFormat, map[string]any{"name": name, "data": data}, "")
			return 0
		case "credits":
			out.result(o.outputFormat, failedResult("/credits failed: retrieving credits: no credits info found"))
			return 1
		}
		commandAnswer(out, o.outputFormat, map[string]any{"name": name, "data": map[string]any{}}, "")
		return 0
	}
	s := newSession(sc, o, out, nil)
	s.start()
	return s.turn(o.print)
}

// commandAnswer writes a print-mode command's answer in the asked format.
func commandAnswer(out *writer, format string, cmd map[string]any, tsv string) {
	res := resultBody{Status: "SUCCESS", Response: tsv, Command: cmd}
	switch format {
	case "stream-json":
		out.line(commandEvent{Event: "command_result", Command: cmd})
		out.line(resultEvent{Event: "result", Result: res})
	case "json":
		out.line(res)
	default:
		fmt.Print(tsv)
	}
}

// checkModel applies agy's model and effort rules.
func checkModel(sc *scenario, id, effort string) string {
	if id == "" {
		return ""
	}
	for _, m := range sc.Models {
		if m.ID != id && m.Label != id {
			continue
		}
		if suffix := id[strings.LastIndex(id, "-")+1:]; effort != "" && slices.Contains(efforts, suffix) && suffix != effort {
			return fmt.Sprintf("invalid model selection (--model %q --effort %q): %s conflicts with --effort=%s", id, effort, id, effort)
		}
		return ""
	}
	return fmt.Sprintf("invalid model selection (--model %q --effort %q): %q is not recognized as a known model", id, effort, id)
}

var efforts = []string{"low", "medium", "high", "xhigh", "max"}

func failedResult(msg string) resultBody { return resultBody{Status: "ERROR", Error: msg} }

// writer writes agy's stdout lines, one at a time.
type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func newWriter(w io.Writer) *writer { return &writer{w: w} }

// line writes v as compact JSON, with Go's HTML escaping, like agy.
func (w *writer) line(v any) {
	b, _ := json.Marshal(v)
	w.raw(append(b, '\n'))
}

// result writes a result as the output format frames it: in an envelope
// for stream-json, bare for json, its error on stderr for text.
func (w *writer) result(format string, r resultBody) {
	switch format {
	case "stream-json":
		w.line(resultEvent{Event: "result", Result: r})
	case "json":
		w.line(r)
	default:
		if r.Error != "" {
			fmt.Fprintln(os.Stderr, "Error: "+r.Error)
		}
	}
}

func (w *writer) raw(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.w.Write(b)
}

// callLog records, one JSON line each, how the stand-in was run and what
// it read.
type callLog struct {
	mu sync.Mutex
	f  *os.File
}

func openCallLog() *callLog {
	path := os.Getenv("FAKE_AGY_LOG")
	if path == "" {
		return &callLog{}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return &callLog{}
	}
	return &callLog{f: f}
}

func (l *callLog) write(entry map[string]any) {
	if l == nil || l.f == nil {
		return
	}
	entry["t"] = time.Now().UTC().Format(time.RFC3339Nano)
	entry["pid"] = os.Getpid()
	b, _ := json.Marshal(entry)
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(append(b, '\n'))
}

func cwd() string {
	d, _ := os.Getwd()
	return d
}

// selectedEnv is the environment a test may check the driver set or
// cleaned.
func selectedEnv() map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", k == "AGY_CLI_DISABLE_AUTO_UPDATE", strings.HasPrefix(k, "CLAUDE"), strings.HasPrefix(k, "ANTHROPIC"),
			strings.HasPrefix(k, "GEMINI"), strings.HasPrefix(k, "ANTIGRAVITY"):
			out[k] = v
		}
	}
	return out
}

// countRun counts the runs of a command across processes, in a file under
// HOME, and returns this run's number.
func countRun(name string) int {
	path := filepath.Join(os.Getenv("HOME"), ".fakeagy-runs-"+name)
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	n++
	_ = os.WriteFile(path, []byte(strconv.Itoa(n)), 0o600)
	return n
}
