package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/claude"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// The relay benchmarks stream a 40-delta answer from an in-process
// stand-in CLI, so the figures are Meridian's own work per response:
// decoding the request, running the turn over the stream-json pipes,
// translating and rendering SSE. Process start is measured separately.

func benchChunks() []string {
	out := make([]string, 40)
	for i := range out {
		out[i] = fmt.Sprintf("word%02d ", i)
	}
	return out
}

const benchBody = `{"model":"bench-model","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Say forty words."}]}`

func benchStack(b *testing.B) *stack {
	return newStack(b, stackOptions{
		claudePath:    "in-process",
		launcher:      testkit.NewInProcessCLI(benchChunks()),
		maxConcurrent: 256,
	})
}

// baseline serves the same SSE bytes Meridian would, from memory: the cost
// of HTTP and SSE on this machine with no gateway work at all.
func baseline(b *testing.B) string {
	var body []byte
	body = anthropic.AppendMessageStart(body, "msg_x", "bench-model", anthropic.Usage{InputTokens: 3})
	body = anthropic.AppendBlockStart(body, 0, []byte(`{"type":"text","text":""}`))
	for _, c := range benchChunks() {
		body = anthropic.AppendBlockDelta(body, 0, []byte(`{"type":"text_delta","text":"`+c+`"}`))
	}
	body = anthropic.AppendBlockStop(body, 0)
	body = anthropic.AppendMessageDelta(body, "end_turn", "", anthropic.Usage{InputTokens: 3, OutputTokens: 2})
	body = anthropic.AppendMessageStop(body)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func newBenchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
}

// benchRoute is one streamed API: where to post, what, and how its
// stream ends.
type benchRoute struct {
	path, body, end string
}

var (
	messagesRoute = benchRoute{"/v1/messages", benchBody, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"}
	chatRoute     = benchRoute{"/v1/chat/completions",
		`{"model":"bench-model","max_completion_tokens":1024,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say forty words."}]}`,
		"data: [DONE]\n\n"}
	responsesRoute = benchRoute{"/v1/responses",
		`{"model":"bench-model","max_output_tokens":1024,"stream":true,"store":false,"input":"Say forty words."}`,
		"event: response.completed\n"}
)

// streamOnce posts a streaming Messages request and reads the stream to
// its end.
func streamOnce(b *testing.B, c *http.Client, url string) { streamRoute(b, c, url, messagesRoute) }

func streamRoute(b *testing.B, c *http.Client, url string, r benchRoute) {
	resp, err := c.Post(url+r.path, "application/json", strings.NewReader(r.body))
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !bytes.Contains(data, []byte(r.end)) {
		b.Fatalf("status %d, err %v, body %.200s", resp.StatusCode, err, data)
	}
}

// latencies runs n sequential requests and returns their durations.
func latencies(b *testing.B, c *http.Client, url string, n int) []time.Duration {
	return routeLatencies(b, c, url, messagesRoute, n)
}

func routeLatencies(b *testing.B, c *http.Client, url string, r benchRoute, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		t0 := time.Now()
		streamRoute(b, c, url, r)
		out[i] = time.Since(t0)
	}
	slices.Sort(out)
	return out
}

// medians sorts each side's durations and returns their medians.
func medians(sides ...[]time.Duration) []time.Duration {
	out := make([]time.Duration, len(sides))
	for i, d := range sides {
		slices.Sort(d)
		out[i] = d[len(d)/2]
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRelayLatency measures one streamed response at a time, side by
// side with the baseline, and reports the gateway's overhead: the median
// difference, plus the ratio of the medians.
func BenchmarkRelayLatency(b *testing.B) {
	s := benchStack(b)
	base := baseline(b)
	c := newBenchClient()
	latencies(b, c, s.URL, 50) // warm connections and caches
	latencies(b, c, base, 50)
	b.ResetTimer()
	var m, bl []time.Duration
	for i := 0; i < b.N; i++ {
		m = append(m, latencies(b, c, s.URL, 1)...)
		bl = append(bl, latencies(b, c, base, 1)...)
	}
	b.StopTimer()
	slices.Sort(m)
	slices.Sort(bl)
	p50, p99 := m[len(m)/2], m[len(m)*99/100]
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(bl[len(bl)/2]), "baseline-p50-ms")
	b.ReportMetric(ms(p50-bl[len(bl)/2]), "overhead-p50-ms")
	b.ReportMetric(float64(p50)/float64(bl[len(bl)/2]), "x-baseline")
}

// BenchmarkRelayChatLatency and BenchmarkRelayResponsesLatency measure
// an OpenAI relay side by side with the Messages relay and the baseline,
// interleaved in one run: the same 40-delta answer, rendered as
// chat.completion.chunk events with a usage chunk, or as Responses events.
// They report the relay's overhead over the baseline and its ratio to the
// Messages relay's overhead.
func BenchmarkRelayChatLatency(b *testing.B) { besideMessages(b, chatRoute, "chat") }

func BenchmarkRelayResponsesLatency(b *testing.B) { besideMessages(b, responsesRoute, "responses") }

func besideMessages(b *testing.B, route benchRoute, name string) {
	s := benchStack(b)
	base := baseline(b)
	c := newBenchClient()
	routeLatencies(b, c, s.URL, route, 50)
	latencies(b, c, s.URL, 50)
	latencies(b, c, base, 50)
	b.ResetTimer()
	var other, msgs, bl []time.Duration
	for i := 0; i < b.N; i++ {
		other = append(other, routeLatencies(b, c, s.URL, route, 1)...)
		msgs = append(msgs, latencies(b, c, s.URL, 1)...)
		bl = append(bl, latencies(b, c, base, 1)...)
	}
	b.StopTimer()
	m := medians(other, msgs, bl)
	over, msgOver := m[0]-m[2], m[1]-m[2]
	b.ReportMetric(ms(m[0]), name+"-p50-ms")
	b.ReportMetric(ms(m[1]), "messages-p50-ms")
	b.ReportMetric(ms(over), name+"-overhead-p50-ms")
	b.ReportMetric(ms(msgOver), "messages-overhead-p50-ms")
	b.ReportMetric(float64(over)/float64(max(msgOver, time.Microsecond)), "x-messages-overhead")
}

// BenchmarkRelayTelemetry measures the Messages relay with the request
// history and metrics on beside the same relay with them off, interleaved
// in one run, and reports the ratio of their overheads over the baseline.
func BenchmarkRelayTelemetry(b *testing.B) {
	off := benchStack(b)
	on := newStack(b, stackOptions{claudePath: "in-process", launcher: testkit.NewInProcessCLI(benchChunks()),
		maxConcurrent: 256, telemetry: true})
	base := baseline(b)
	c := newBenchClient()
	for _, u := range []string{off.URL, on.URL, base} {
		latencies(b, c, u, 50)
	}
	b.ResetTimer()
	var offs, ons, bl []time.Duration
	for i := 0; i < b.N; i++ {
		offs = append(offs, latencies(b, c, off.URL, 1)...)
		ons = append(ons, latencies(b, c, on.URL, 1)...)
		bl = append(bl, latencies(b, c, base, 1)...)
	}
	b.StopTimer()
	m := medians(offs, ons, bl)
	overOff, overOn := m[0]-m[2], m[1]-m[2]
	b.ReportMetric(ms(m[1]), "telemetry-p50-ms")
	b.ReportMetric(ms(m[0]), "off-p50-ms")
	b.ReportMetric(ms(overOn), "telemetry-overhead-p50-ms")
	b.ReportMetric(ms(overOff), "off-overhead-p50-ms")
	b.ReportMetric(float64(overOn)/float64(max(overOff, time.Microsecond)), "x-off-overhead")
	b.ReportMetric(float64(m[1])/float64(m[0]), "x-off-p50")
}

// BenchmarkRelayThroughput runs many clients at once and reports streamed
// responses per second, for Meridian and for the baseline, side by side.
func BenchmarkRelayThroughput(b *testing.B) {
	s := benchStack(b)
	base := baseline(b)
	c := newBenchClient()
	const clients = 16
	run := func(url string, n int) float64 {
		var wg sync.WaitGroup
		work := make(chan struct{}, n)
		for range n {
			work <- struct{}{}
		}
		close(work)
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for range work {
					streamOnce(b, c, url)
				}
			})
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	run(s.URL, 200)
	run(base, 200)
	b.ResetTimer()
	n := max(b.N, 200)
	got := run(s.URL, n)
	b.StopTimer()
	ref := run(base, n)
	b.ReportMetric(got, "responses/s")
	b.ReportMetric(ref, "baseline-responses/s")
	b.ReportMetric(got/ref, "x-baseline")
}

// BenchmarkProcessStart measures what the relay benchmarks leave out: from
// launching a CLI process to its first line of output after the first user
// message, for the scripted stand-in and for the real pinned CLI against
// the fake upstream.
func BenchmarkProcessStart(b *testing.B) {
	b.Run("scripted", func(b *testing.B) {
		path, scriptEnv := testkit.FakeClaude(b, "@user", testkit.FakeInit)
		measureStart(b, path, []string{scriptEnv})
	})
	b.Run("real-claude", func(b *testing.B) {
		up := testkit.NewUpstream(b)
		env, _ := testkit.ClaudeEnv(b, up.URL)
		measureStart(b, testkit.ClaudePath(b), env)
	})
}

func measureStart(b *testing.B, path string, env []string) {
	dir := b.TempDir()
	user := []byte(`{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null}` + "\n")
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		proc, err := claude.ExecLauncher{}.Launch(claude.Spec{Path: path, Args: claude.Args(claudeStartOptions()), Env: env, Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
		if _, err := proc.Stdin().Write(user); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(proc.Stdout()).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		_ = proc.Stdin().Close()
		_ = proc.Signal(9)
		_ = proc.Wait()
		_ = proc.Stdout().Close()
		_ = proc.Stderr().Close()
	}
	b.ReportMetric(ms(total/time.Duration(b.N)), "ms-to-first-line")
}

func claudeStartOptions() backend.StartOptions { return backend.StartOptions{Model: "bench-model"} }
