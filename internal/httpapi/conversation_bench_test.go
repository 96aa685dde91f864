package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/replay"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// benchConversation runs turns of one conversation with raw HTTP (so the
// client's own cost is the same on both paths) and returns each turn's
// latency and the bytes Meridian wrote to the CLI for it.
func benchConversation(b *testing.B, s *stack, key string, turns int) (lat []time.Duration, bytes []int) {
	var history []map[string]any
	for turn := 1; turn <= turns; turn++ {
		q := fmt.Sprintf("question %d", turn)
		history = append(history, map[string]any{"role": "user", "content": q})
		body, _ := json.Marshal(map[string]any{"model": "bench-model", "max_tokens": 100, "messages": history})
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Claude-Code-Session-Id", key)
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var msg struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		err = json.NewDecoder(resp.Body).Decode(&msg)
		resp.Body.Close()
		lat = append(lat, time.Since(t0))
		if err != nil || resp.StatusCode != 200 || len(msg.Content) != 1 || msg.Content[0].Text != "answer to "+q {
			b.Fatalf("turn %d: %d %v %+v", turn, resp.StatusCode, err, msg)
		}
		history = append(history, map[string]any{"role": "assistant", "content": msg.Content[0].Text})
		var info struct {
			LastInputBytes int `json:"last_input_bytes"`
		}
		r, err := http.Get(s.URL + "/v1/sessions/" + url.PathEscape(key))
		if err != nil {
			b.Fatal(err)
		}
		_ = json.NewDecoder(r.Body).Decode(&info)
		r.Body.Close()
		bytes = append(bytes, info.LastInputBytes)
	}
	return lat, bytes
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkConversationTurns compares, in one run against one fake
// upstream, turns 2–10 of a conversation continued on its live claude
// process with the same turns each resumed in a fresh process (--resume),
// and reports the bytes written to the CLI per turn on the live path over
// 20 turns next to what a fresh session would be given, plus the memory of
// an idle live process.
func BenchmarkConversationTurns(b *testing.B) {
	live := newStack(b, stackOptions{sessions: true})
	resumed := newStack(b, stackOptions{sessions: true, noLive: true, share: live})
	answerLastQuestion(live.Upstream)

	var liveLat, resumeLat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, _ := benchConversation(b, live, fmt.Sprintf("live-%d", i), 10)
		r, _ := benchConversation(b, resumed, fmt.Sprintf("resumed-%d", i), 10)
		liveLat = append(liveLat, l[1:]...) // turns 2-10
		resumeLat = append(resumeLat, r[1:]...)
	}
	b.StopTimer()
	lm, rm := median(liveLat), median(resumeLat)
	b.ReportMetric(ms(lm), "live-turn-p50-ms")
	b.ReportMetric(ms(rm), "resume-turn-p50-ms")
	b.ReportMetric(float64(rm)/float64(lm), "x-faster-live")

	_, sent := benchConversation(b, live, "bytes", 20)
	b.ReportMetric(float64(sent[0]), "bytes-turn1")
	b.ReportMetric(float64(sent[9]), "bytes-turn10")
	b.ReportMetric(float64(sent[19]), "bytes-turn20")
	b.ReportMetric(float64(replayBytes(20)), "fresh-replay-bytes-turn20")

	if pids := testkit.Processes(live.Marker); len(pids) > 0 {
		var total int
		for _, pid := range pids {
			total += testkit.RSSKB(pid)
		}
		b.ReportMetric(float64(total)/float64(len(pids))/1024, "idle-rss-MB-per-live-process")
	}
}

// replayBytes is the size of the first message a fresh session gets for
// the 20-turn benchmark conversation: what every turn would cost without a
// session that holds the history.
func replayBytes(turns int) int {
	var msgs []anthropic.Message
	for turn := 1; turn <= turns; turn++ {
		q := fmt.Sprintf("question %d", turn)
		msgs = append(msgs, textMessage(anthropic.RoleUser, q))
		if turn < turns {
			msgs = append(msgs, textMessage(anthropic.RoleAssistant, "answer to "+q))
		}
	}
	n := 0
	for _, b := range replay.Render(msgs) {
		n += len(b)
	}
	return n
}

func textMessage(role, text string) anthropic.Message {
	raw, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return anthropic.Message{Role: role, Content: []anthropic.ContentBlock{{Type: anthropic.BlockText, Text: text, Raw: raw}}}
}
