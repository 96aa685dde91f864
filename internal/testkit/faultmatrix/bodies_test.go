//go:build faultmatrix

package faultmatrix

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Valid bodies of each route, which the hostile ones are made from.
var hostileRoutes = []struct{ path, base string }{
	{"/v1/messages", `{"model":"test-model","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"t","input_schema":{"type":"object"}}]}`},
	{"/v1/messages/count_tokens", `{"model":"test-model","messages":[{"role":"user","content":"hi"}]}`},
	{"/v1/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t","parameters":{"type":"object"}}}]}`},
	{"/v1/responses", `{"model":"test-model","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"tools":[{"type":"function","name":"t","parameters":{"type":"object"}}]}`},
}

// Values put in place of one of a valid body's values: wrong types,
// extremes, and shapes a parser may choke on.
var hostileValues = []string{
	`null`, `true`, `-1`, `0`, `1e308`, `-9223372036854775809`, `18446744073709551616`, `""`, `"\u0000"`, `"\ud800"`,
	`[]`, `{}`, `[null]`, `{"":null}`, `"` + strings.Repeat("x", 200_000) + `"`, strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"!!"}}`, `{"type":"tool_result","tool_use_id":""}`,
	`{"type":"nonsense"}`, `"system"`, `"tool"`, `[{"role":"user"}]`, `{"$ref":"#"}`, `"claude-\u202eledom"`,
}

// hostile makes the n-th hostile body of a route from its valid one.
func hostile(r *rand.Rand, base string) (string, string) {
	switch k := r.IntN(10); {
	case k == 0:
		b := make([]byte, r.IntN(2000))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return "random bytes", string(b)
	case k == 1:
		return "cut short", base[:1+r.IntN(len(base)-2)]
	case k == 2:
		return "nested deep", strings.Repeat(`{"a":`, 2000+r.IntN(20000)) + "1" + strings.Repeat("}", 100)
	case k == 3:
		return "keys twice", strings.Replace(base, `{"model":"test-model"`, `{"model":"test-model","model":{"x":1}`, 1)
	default:
		var v any
		_ = json.Unmarshal([]byte(base), &v)
		paths := valuePaths(v, nil)
		p := paths[r.IntN(len(paths))]
		repl := hostileValues[r.IntN(len(hostileValues))]
		out, _ := json.Marshal(replaceAt(v, p, json.RawMessage(repl)))
		return "value " + strings.Join(p, ".") + " := " + trim(repl, 30), string(out)
	}
}

// valuePaths lists the path of every value in v, containers included.
func valuePaths(v any, at []string) [][]string {
	paths := [][]string{append([]string(nil), at...)}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			paths = append(paths, valuePaths(e, append(at, k))...)
		}
	case []any:
		for i, e := range x {
			paths = append(paths, valuePaths(e, append(at, fmt.Sprint(i)))...)
		}
	}
	return paths
}

// replaceAt returns v with the value at path replaced by repl.
func replaceAt(v any, path []string, repl any) any {
	if len(path) == 0 {
		return repl
	}
	switch x := v.(type) {
	case map[string]any:
		c := map[string]any{}
		for k, e := range x {
			c[k] = e
		}
		c[path[0]] = replaceAt(x[path[0]], path[1:], repl)
		return c
	case []any:
		c := append([]any(nil), x...)
		var i int
		_, _ = fmt.Sscan(path[0], &i)
		c[i] = replaceAt(x[i], path[1:], repl)
		return c
	}
	return v
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// hostileBodies sends 2,000 hostile bodies through the balancer, eight
// at a time: each is refused in its route's own error shape with a 4xx
// (or answered, when the change left it valid), never a 5xx but a wait
// with Retry-After, never with a local path or a stack; every host is
// healthy after and no CLI was left behind.
func hostileBodies(t *testing.T, c *cluster, f *figures) {
	c.balanced(t)
	before := 0
	for _, h := range c.hosts {
		before += h.claudes()
	}
	const total = 2000
	r := rand.New(rand.NewPCG(43, 2026))
	type job struct{ route, kind, body string }
	jobs := make(chan job)
	var mu sync.Mutex
	statuses := map[int]int{}
	accepted := map[string]int{}
	var bad []string
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				resp, body, err := post(c.lb, j.route, j.body, "Anthropic-Version", "2023-06-01")
				mu.Lock()
				if err != nil {
					bad = append(bad, fmt.Sprintf("%s %s: %v", j.route, j.kind, err))
					mu.Unlock()
					continue
				}
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusOK {
					accepted[j.route+" "+j.kind]++
				}
				if why := judge(j.route, resp, body); why != "" {
					bad = append(bad, fmt.Sprintf("%s %s: %d %s: %.200s", j.route, j.kind, resp.StatusCode, why, body))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range total {
		route := hostileRoutes[i%len(hostileRoutes)]
		kind, body := hostile(r, route.base)
		jobs <- job{route.path, kind, body}
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	for i, b := range bad {
		if i == 10 {
			t.Errorf("… and %d more", len(bad)-10)
			break
		}
		t.Error(b)
	}
	for _, h := range c.hosts {
		if getStatus(h.url()+"/health") != http.StatusOK {
			t.Errorf("host %s is not healthy after the bodies", h.ip)
		}
	}
	t.Logf("answered as valid after the change: %v", accepted)
	after := 0
	for _, h := range c.hosts {
		after += h.claudes()
	}
	f.add(t, "%d bodies in %v: statuses %v, %d judged wrong, CLIs %d before and %d after", total,
		took.Round(100*time.Millisecond), statuses, len(bad), before, after)
}

// judge says what is wrong with an answer to a hostile body, or "".
func judge(route string, resp *http.Response, body string) string {
	switch {
	case strings.Contains(body, "/tmp/") || strings.Contains(body, "/root") || strings.Contains(body, "/home/"):
		return "a local path"
	case strings.Contains(body, "goroutine ") || strings.Contains(body, "panic"):
		return "a stack"
	case resp.StatusCode >= 500 && resp.Header.Get("Retry-After") == "":
		return "a 5xx without a wait"
	case resp.StatusCode == http.StatusOK:
		return ""
	}
	var e struct {
		Type  string
		Error *struct{ Type, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == nil || e.Error.Message == "" {
		return "no error object"
	}
	if strings.HasPrefix(route, "/v1/messages") && e.Type != "error" {
		return "not the Messages API's error shape"
	}
	if !strings.HasPrefix(route, "/v1/messages") && e.Type != "" {
		return "not OpenAI's error shape"
	}
	return ""
}
