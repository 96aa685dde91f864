package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// `curl http://127.0.0.1:3456/` gets the landing page as plain text: how
// meridian stands, its CLI, today's requests and where clients point; a
// program's GET / still gets JSON.
func TestCurlGetsAPlainTextSummary(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{})
	g.start()
	out, err := exec.Command("curl", "-s", "-i", g.url+"/").Output()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{"Content-Type: text/plain", "Meridian ", ": ok\n", "antigravity: agy 1.2.17, logged in google",
		"agy processes: 0 live", "today: 0 requests", "Point clients here:", "OpenAI SDKs", "/v1\"", "as JSON: " + g.url + "/health"} {
		if !strings.Contains(text, want) {
			t.Fatalf("curl / lacks %q:\n%s", want, text)
		}
	}
	resp, err := http.Get(g.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Service string `json:"service"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Service != "meridian" {
		t.Fatalf("a program's GET /: %v %+v", err, v)
	}
}
