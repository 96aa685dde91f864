package lead

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
)

// RenderLog turns a spawn's event log (the CLI's stream-json lines) into
// lines for people: the session start, what the agent said, the tools it
// called and what they returned, and the result. Partial-message and
// protocol events are left out; lines that are not JSON are shown as they
// are.
func RenderLog(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var ev logEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			if _, err := fmt.Fprintf(w, "%s\n", line); err != nil {
				return err
			}
			continue
		}
		for _, out := range ev.lines() {
			if _, err := fmt.Fprintln(w, out); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

type logEvent struct {
	Type      string  `json:"type"`
	Subtype   string  `json:"subtype"`
	SessionID string  `json:"session_id"`
	Model     string  `json:"model"`
	Cwd       string  `json:"cwd"`
	NumTurns  int     `json:"num_turns"`
	CostUSD   float64 `json:"total_cost_usd"`
	DurMS     int64   `json:"duration_ms"`
	IsError   bool    `json:"is_error"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type logBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

func (ev logEvent) lines() []string {
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			return []string{fmt.Sprintf("session %s · model %s · %s", ev.SessionID, ev.Model, ev.Cwd)}
		}
	case "assistant", "user":
		var blocks []logBlock
		if json.Unmarshal(ev.Message.Content, &blocks) != nil {
			var s string
			if json.Unmarshal(ev.Message.Content, &s) == nil && ev.Type == "user" {
				return []string{"user: " + spawn.Clip(s, 400)}
			}
			return nil
		}
		var out []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				out = append(out, ev.Type+": "+spawn.Clip(b.Text, 4000))
			case "tool_use":
				out = append(out, "tool: "+b.Name+" "+spawn.Clip(string(b.Input), 300))
			case "tool_result":
				tag := "tool result: "
				if b.IsError {
					tag = "tool error: "
				}
				out = append(out, tag+spawn.Clip(resultText(b.Content), 300))
			}
		}
		return out
	case "result":
		status := "done"
		if ev.IsError {
			status = "failed"
		}
		return []string{fmt.Sprintf("%s (%s) · %d turns · $%.4f · %s", status, ev.Subtype, ev.NumTurns, ev.CostUSD,
			(time.Duration(ev.DurMS) * time.Millisecond).Round(time.Millisecond))}
	}
	return nil
}

// resultText flattens a tool result's content, a string or text blocks.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []logBlock
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, " ")
	}
	return string(raw)
}
