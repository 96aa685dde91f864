package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/pool"
)

// setToolsTimeout bounds how long a live process may take to re-read its
// tool list (13 ms measured) before the turn goes to a new process.
const setToolsTimeout = 5 * time.Second

// contractKey digests what a session is started with and cannot change
// afterwards: a live process serves only requests with the same contract.
// The client's tools are kept apart (toolDigests): a live process can take
// added tools, not changed or removed ones.
func contractKey(o backend.StartOptions) string {
	parts := []string{o.Model, o.Dir, strconv.Itoa(o.MaxOutputTokens),
		strconv.Itoa(int(o.Thinking.Mode)), strconv.Itoa(o.Thinking.Budget), o.Effort, strconv.Itoa(len(o.System))}
	parts = append(parts, webSearchKey(o.WebSearch)...)
	parts = append(parts, "schema", string(o.JSONSchema))
	return digest(append(parts, o.System...)...)
}

// startKey digests the options a process must be started with: a spare
// serves only a conversation whose options give the same key. The system
// prompt, tools and output schema come later (Bind); the CLI's own tool
// list (web search) is on its command line.
func startKey(o backend.StartOptions) string {
	return digest(append([]string{o.Model, o.Dir, strconv.Itoa(o.MaxOutputTokens), strconv.Itoa(int(o.Thinking.Mode)),
		strconv.Itoa(o.Thinking.Budget), o.Effort}, webSearchKey(o.WebSearch)...)...)
}

// toolDigests names each client tool by its whole definition.
func toolDigests(tools []backend.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = digest(t.Name, t.Description, string(t.InputSchema))
	}
	return out
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// toolsFit reports whether a process offering have can serve a request
// offering want, and whether it must first be given tools it lacks. The
// pinned CLI re-reads a changed list but only adds to it: a definition it
// holds stays as it was and a tool dropped from the list stays offered
// (measured with 2.1.332). So a live process fits only when it offers no
// tool the request lacks; order does not matter.
func toolsFit(have, want []string) (fits, adds bool) {
	for _, h := range have {
		if !slices.Contains(want, h) {
			return false, false
		}
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return true, true
		}
	}
	return true, false
}

// adoptTools makes a live process offer the request's tools: as it is, or
// by telling it of the added ones. False sends the turn to a new process.
func (t *turn) adoptTools(ctx context.Context, live *pool.Live, want []string, tools []backend.Tool) bool {
	g := t.g
	fits, adds := toolsFit(live.Tools, want)
	if !fits {
		return false
	}
	if !adds {
		return true
	}
	setter, ok := live.Session.(backend.ToolSetter)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, setToolsTimeout)
	defer cancel()
	if err := setter.SetTools(ctx, tools); err != nil {
		if !errors.Is(err, backend.ErrToolsFixed) {
			g.log.WarnContext(ctx, "a live process did not take the added tools; the turn resumes in a new one", "conversation", live.Key, "err", err)
		}
		return false
	}
	live.Tools = want
	return true
}
