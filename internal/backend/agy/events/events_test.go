package events

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/testkit"
)

func TestPure(t *testing.T) { testkit.CheckPure(t, "internal/backend") }

// replay folds a recorded stream into a turn, failing on any line the
// parser does not take or does not know.
func replay(t *testing.T, name string) (Event, *Turn) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var init Event
	turn := new(Turn)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		ev, err := Parse(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		if !ev.Known() {
			t.Fatalf("%s:%d: unknown event %q", name, n, ev.Kind)
		}
		if ev.Kind == KindInit {
			init = ev
			continue
		}
		turn.Add(ev)
	}
	if len(turn.UnknownSteps()) > 0 {
		t.Fatalf("%s: unknown step types %v", name, turn.UnknownSteps())
	}
	if !turn.Done() {
		t.Fatalf("%s: no result", name)
	}
	return init, turn
}

// Every recorded stream of real agy runs parses without one unknown
// event or step, and its turn folds to the answer agy itself reported.
func TestRecordedStreams(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "recorded", "*.ndjson"))
	if len(files) < 7 {
		t.Fatalf("%d recordings", len(files))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			init, turn := replay(t, name)
			if init.ConversationID == "" || len(init.Init.Tools) != 60 || init.Init.PermissionMode != "always-proceed" {
				t.Fatalf("init %+v", init)
			}
			o := turn.Outcome(nil, false)
			if o.Failure != nil || o.Text != turn.result.Response || o.ConversationID != init.ConversationID {
				t.Fatalf("outcome %+v, result %+v", o, turn.result)
			}
		})
	}
}

// A first turn's usage is the result's; a tool call's model step without
// text adds none; the tool step settles with its output.
func TestToolTurn(t *testing.T) {
	init, turn := replay(t, "1.2.17-tool.ndjson")
	o := turn.Outcome(nil, false)
	if init.Init.Model != "gemini-3.8-flash-low" || o.Text != "done\n" {
		t.Fatalf("model %q text %q", init.Init.Model, o.Text)
	}
	if want := (Usage{Input: 25958, Output: 128, Total: 26086}); o.Usage != want || turn.steps.Input != 12870+13088 {
		t.Fatalf("usage %+v, steps %+v", o.Usage, turn.steps)
	}
	if len(o.Tools) != 1 || o.Tools[0].Name != "run_command" || o.Tools[0].State != StateDone ||
		*o.Tools[0].Output != "hello_p0c\r\n" || string(o.Tools[0].Parameters) != `{"CommandLine":"echo hello_p0c"}` {
		t.Fatalf("tools %+v", o.Tools)
	}
	// A sandbox refusal is an output, not an error.
	_, turn = replay(t, "1.2.17-sandbox-denied.ndjson")
	if o := turn.Outcome(nil, false); o.Failure != nil || !strings.Contains(*o.Tools[0].Output, "Operation not permitted") {
		t.Fatalf("sandboxed: %+v", o)
	}
}

// Three turns of one conversation, each in its own process: with the
// previous result's total, each turn's usage is the difference, equal to
// its model steps; without it, the steps are summed.
func TestCumulativeUsageBecomesPerTurn(t *testing.T) {
	var prev *Usage
	for i, name := range []string{"1.3.1-t1.ndjson", "1.3.1-t2.ndjson", "1.3.1-t3.ndjson"} {
		_, turn := replay(t, name)
		o := turn.Outcome(prev, false)
		if o.Usage != turn.steps || o.Usage.Output != 1 {
			t.Fatalf("turn %d: usage %+v, its steps %+v", i+1, o.Usage, turn.steps)
		}
		prev = &o.Cumulative
	}
	_, turn := replay(t, "1.2.17-conversation-turn2.ndjson")
	if o := turn.Outcome(nil, false); o.Usage != (Usage{Input: 13091, Output: 693, Thinking: 692, Total: 13784}) {
		t.Fatalf("a resumed turn without the previous total: %+v", o.Usage)
	}
}

func TestParseRefusesWhatIsNotAnEvent(t *testing.T) {
	for _, c := range []struct {
		line string
		want error
	}{
		{`reply with exactly: alpha`, ErrNotJSON},
		{`{"prompt":"x"}`, ErrNoKind},
		{`{"event":"init"}`, nil},
		{`{"event":"step_update","step_update":{"step_index":"one"}}`, nil},
	} {
		_, err := Parse([]byte(c.line))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("Parse(%s) = %v, want %v", c.line, err, c.want)
		}
	}
	ev, err := Parse([]byte(`{"event":"heartbeat","heartbeat":{}}`))
	if err != nil || ev.Known() || ev.Kind != "heartbeat" {
		t.Fatalf("an unknown kind: %+v %v", ev, err)
	}
	var turn Turn
	turn.Add(Event{Kind: KindStep, Step: &Step{Type: "thinking", State: StateDone}})
	if got := turn.UnknownSteps(); len(got) != 1 || got[0] != "thinking" {
		t.Fatalf("unknown steps %v", got)
	}
}

// agy's failure texts, as recorded, classified with the status and wait
// a client should see.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		msg    string
		kind   backend.FailureKind
		status int
		wait   time.Duration
	}{
		{"Individual quota reached. Please upgrade your subscription to increase your limits. Resets in 120h9m43s.", backend.FailUpstream, 429, 120*time.Hour + 9*time.Minute + 43*time.Second},
		{"authentication failed or timed out", backend.FailUpstream, 401, 0},
		{"agent executor error: generating and executing: Error 400, Message: API key not valid. Please pass a valid API key.", backend.FailUpstream, 401, 0},
		{`invalid model selection (--model "gemini-3.8-flash-low" --effort "high"): conflicts with --effort=high`, backend.FailUpstream, 400, 0},
		{`gemini-3.8-flash has no "max" effort (available: low, medium, high)`, backend.FailUpstream, 400, 0},
		{`"banana" is not recognized as a known model`, backend.FailUpstream, 400, 0},
		{"agent executor error: Error 429, Status: RESOURCE_EXHAUSTED", backend.FailUpstream, 429, 0},
		{"agent executor error: Error 503, Status: MODEL_CAPACITY_EXHAUSTED", backend.FailUpstream, StatusOverloaded, 0},
		{"agent executor error: Error 503, Status: UNAVAILABLE", backend.FailUpstream, 503, 0},
		{"timeout waiting for response", backend.FailLimit, 0, 0},
		{"Agent execution terminated due to error.", backend.FailBackend, 0, 0},
	} {
		f := Classify(c.msg)
		if f.Kind != c.kind || f.Status != c.status || f.RetryDelay != c.wait {
			t.Errorf("Classify(%q) = %+v", c.msg, f)
		}
	}
}

// Headless soft-deny shows three ways; each is a failure, never an empty
// answer.
func TestSoftDenyIsNeverAnAnswer(t *testing.T) {
	silent := func() *Turn {
		var tr Turn
		tr.Add(Event{Kind: KindStep, Step: &Step{Index: 2, Type: StepTool, State: StateActive, ToolName: "run_command"}})
		tr.Add(Event{Kind: KindStep, Step: &Step{Index: 2, Type: StepTool, State: StateDone, ToolName: "run_command"}})
		return &tr
	}
	canceled := silent()
	canceled.Add(Event{Kind: KindResult, Result: &Result{Status: StatusCanceled, NumTurns: 1}})
	denied := new(Turn)
	denied.Add(Event{Kind: KindResult, Result: &Result{Status: StatusSuccess, NumTurns: 1, DeniedActions: []DeniedAction{{Action: "command", DisplayName: "RunCommand"}}}})
	noticed := new(Turn)
	noticed.Add(Event{Kind: KindResult, Result: &Result{Status: StatusSuccess, NumTurns: 1}})
	for name, c := range map[string]struct {
		turn   *Turn
		notice bool
	}{"1.1.x canceled": {canceled, false}, "1.2.x denied_actions": {denied, false}, "stderr notice": {noticed, true}} {
		if o := c.turn.Outcome(nil, c.notice); o.Failure == nil || o.Failure.Code != "soft_deny" {
			t.Errorf("%s: %+v", name, o.Failure)
		}
	}
	if o := noticed.Outcome(nil, false); o.Failure != nil {
		t.Fatalf("a plain success: %+v", o.Failure)
	}
}

// A partial answer agy passes off as a success after --print-timeout
// (1.1.28 on) carries no usage: it is a failure, not an answer.
func TestPartialSuccessAfterPrintTimeout(t *testing.T) {
	var tr Turn
	tr.Add(Event{Kind: KindStep, Step: &Step{Type: StepAgentResponse, State: StateActive, TextDelta: "half an"}})
	tr.Add(Event{Kind: KindResult, Result: &Result{Status: StatusSuccess, Response: "half an", NumTurns: 1}})
	if o := tr.Outcome(nil, false); o.Failure == nil || o.Failure.Kind != backend.FailLimit {
		t.Fatalf("%+v", o.Failure)
	}
}

// AGY_ERROR lines are read leniently: their fields were never recorded.
func TestClassifyAGYError(t *testing.T) {
	for _, c := range []struct {
		line   string
		status int
		msg    string
		wait   time.Duration
	}{
		{`AGY_ERROR: {"code":429,"status":"RESOURCE_EXHAUSTED","message":"exhausted","retryDelay":"17s"}`, 429, "exhausted", 17 * time.Second},
		{`AGY_ERROR: {"error":{"message":"The model is overloaded. MODEL_CAPACITY_EXHAUSTED"}}`, 529, "The model is overloaded. MODEL_CAPACITY_EXHAUSTED", 0},
		{`AGY_ERROR: {"error":"Error 503 UNAVAILABLE","retry_delay":"soon"}`, 503, "Error 503 UNAVAILABLE", 0},
		{`AGY_ERROR: not json but Error 429`, 429, "not json but Error 429", 0},
		{`AGY_ERROR: {"message":"something else"}`, 0, "", 0},
		{`AGY_ERROR:`, 0, "", 0},
	} {
		f := ClassifyAGYError(c.line)
		if c.status == 0 {
			if f != nil {
				t.Errorf("%s: %+v, want nothing", c.line, f)
			}
			continue
		}
		if f == nil || f.Status != c.status || f.Message != c.msg || f.RetryDelay != c.wait {
			t.Errorf("%s: %+v", c.line, f)
		}
	}
}
