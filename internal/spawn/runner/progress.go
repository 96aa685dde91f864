package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Progress is what a running spawn has done so far, for the live status
// lines of `meridian spawn wait`.
type Progress struct {
	InTok    int       `json:"in_tokens"`
	OutTok   int       `json:"out_tokens"`
	LastTool string    `json:"last_tool,omitempty"`
	Tools    int       `json:"tools"`
	Updated  time.Time `json:"updated"`
}

// Progress is the file a running spawn keeps its progress in.
func (a Artifacts) Progress() string { return filepath.Join(string(a), "progress.json") }

// ReadProgress reads a spawn's progress; ok is false before the first.
func (a Artifacts) ReadProgress() (p Progress, ok bool) {
	b, err := os.ReadFile(a.Progress())
	if err != nil || json.Unmarshal(b, &p) != nil {
		return Progress{}, false
	}
	return p, true
}

// progressEvery spaces the writes of a spawn's progress; a new tool is
// written at once.
const progressEvery = time.Second

// progress reads the CLI's output as it is written (the driver's tap)
// into the spawn's progress file: the driver reports only what a client
// sees, and a spawn's own tools (Bash, Read, …) are not among it.
type progress struct {
	art     Artifacts
	p       Progress
	written time.Time
	partial []byte
}

// Write implements io.Writer for the tap: whole lines are read, a partial
// one waits for its end.
func (t *progress) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.partial = append(t.partial, b...)
			break
		}
		line := b[:i]
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = t.partial[:0]
		}
		t.line(line)
		b = b[i+1:]
	}
	return n, nil
}

// streamLine is the part of a stream_event line progress reads.
type streamLine struct {
	Type  string `json:"type"`
	Event struct {
		Type    string `json:"type"`
		Message struct {
			Usage *backendUsage `json:"usage"`
		} `json:"message"`
		Usage        *backendUsage `json:"usage"`
		ContentBlock struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"content_block"`
	} `json:"event"`
}

type backendUsage struct {
	Input      int `json:"input_tokens"`
	Output     int `json:"output_tokens"`
	CacheRead  int `json:"cache_read_input_tokens"`
	CacheWrite int `json:"cache_creation_input_tokens"`
}

func (t *progress) line(b []byte) {
	// Most lines are text deltas: skip them before decoding anything.
	if !bytes.Contains(b, []byte(`"stream_event"`)) || bytes.Contains(b, []byte(`"content_block_delta"`)) {
		return
	}
	var l streamLine
	if json.Unmarshal(b, &l) != nil || l.Type != "stream_event" {
		return
	}
	now := time.Now()
	switch e := l.Event; e.Type {
	case "message_start":
		if u := e.Message.Usage; u != nil {
			t.p.InTok += u.Input + u.CacheRead + u.CacheWrite
		}
	case "message_delta":
		if u := e.Usage; u != nil {
			t.p.OutTok += u.Output
		}
	case "content_block_start":
		if e.ContentBlock.Type == "tool_use" && e.ContentBlock.Name != "" {
			t.p.LastTool, t.p.Tools = e.ContentBlock.Name, t.p.Tools+1
			t.write(now)
			return
		}
	default:
		return
	}
	if now.Sub(t.written) >= progressEvery {
		t.write(now)
	}
}

// write replaces the file whole, so a reader never sees half of it. A
// failure only costs the status line.
func (t *progress) write(now time.Time) {
	t.p.Updated, t.written = now, now
	b, err := json.Marshal(t.p)
	if err != nil {
		return
	}
	tmp := t.art.Progress() + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, t.art.Progress())
	}
}
