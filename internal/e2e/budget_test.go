package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// withPrices gives the gateway list prices for the fake upstream's model,
// as a user sets them in the settings file, plus extra settings.
func (g *gatewayProc) withPrices(t *testing.T, extra string) {
	t.Helper()
	settings := filepath.Join(t.TempDir(), "config.toml")
	text := "[pricing.\"test-model\"]\ninput = 3\noutput = 15\n" + extra
	if err := os.WriteFile(settings, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	g.env = append(g.env, "MERIDIAN_CONFIG="+settings)
}

// A key with a $1 monthly budget, each answer costing $0.30 at the
// settings' prices: the third answer crosses the 80 % mark (one alert to
// the webhook), the fourth crosses the budget and still finishes, and the
// fifth is refused with 429 and Retry-After to the first of next month.
func TestDollarBudget(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.withPrices(t, "")
	// 100,000 input tokens at $3 a million: $0.30 an answer.
	g.up.Always(testkit.Reply{Text: "ok", Usage: testkit.Usage{InputTokens: 100_000}})
	h := &hook{posts: map[string][]map[string]any{}, tries: map[string]int{}, refuse: map[string]int{}}
	receiver := httptest.NewServer(h)
	t.Cleanup(receiver.Close)
	cmd := exec.Command(g.bin, "alert", "add", "ops", "--webhook", receiver.URL+"/ops", "--data-dir", g.dataDir)
	cmd.Env = g.env
	if out, code := combined(t, cmd); code != 0 {
		t.Fatalf("alert add: %s", out)
	}
	key := g.addKey(t, "", "ci", "--budget", "1", "--per", "month")
	g.start()
	for i := range 4 {
		resp, body, err := g.post(prompt(fmt.Sprint("answer ", i)), "X-Api-Key", key)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("answer %d: %v %d %s", i, err, resp.StatusCode, body)
		}
		if i == 2 {
			if err := testkit.WaitFor(10*time.Second, func() error {
				if h.count("/ops") != 1 {
					return fmt.Errorf("%d alerts", h.count("/ops"))
				}
				return nil
			}); err != nil {
				t.Fatalf("the 80%% alert: %v", err)
			}
		}
	}
	resp, body, err := g.post(prompt("one too many"), "X-Api-Key", key)
	now := time.Now().UTC()
	if err != nil || resp.StatusCode != 429 || !strings.Contains(body, "budget of $1.00 a month") {
		t.Fatalf("over the budget: %v %d %s", err, resp.StatusCode, body)
	}
	end := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	got, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if want := int(end.Sub(now).Seconds()); got < want-2 || got > want+2 {
		t.Fatalf("Retry-After %d s, want about %d s (to %v)", got, want, end)
	}
	if upstreamHad(g.up, "one too many") != 0 {
		t.Fatal("the refused request reached the upstream")
	}
	// The mark's alert came once; the budget's own came after it.
	if err := testkit.WaitFor(10*time.Second, func() error {
		if h.count("/ops") != 2 {
			return fmt.Errorf("%d alerts", h.count("/ops"))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // room for a duplicate that must not come
	h.mu.Lock()
	posts := h.posts["/ops"]
	h.mu.Unlock()
	if len(posts) != 2 || posts[0]["kind"] != "budget" || posts[0]["api_key"] != "ci" ||
		!strings.Contains(posts[0]["message"].(string), "$0.90 of its $1.00 budget") ||
		!strings.Contains(posts[1]["message"].(string), "has spent its budget: $1.20 of $1.00") {
		t.Fatalf("alerts: %v", posts)
	}
	// The key's own figures show the spend beside its tokens.
	req, _ := http.NewRequest(http.MethodGet, g.url+"/v1/usage/key", nil)
	req.Header.Set("X-Api-Key", key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("usage/key: %v %v", err, resp)
	} else {
		var raw map[string]any
		err := json.NewDecoder(resp.Body).Decode(&raw)
		resp.Body.Close()
		b, _ := raw["budget"].(map[string]any)
		if err != nil || b["usd"] != 1.0 || b["spent_usd"] != 1.2 || b["per"] != "month" {
			t.Fatalf("usage/key budget: %v %v", raw["budget"], err)
		}
	}
}
