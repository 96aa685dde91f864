package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// --backend combined: Claude on the usual routes, Antigravity under
// /antigravity/ (and codex under /codex/). With one Claude slot held by a request, an Antigravity
// request is answered at once: each backend has its own admission; and
// each shows its own models and quota.
func TestCombinedBackends(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(testkit.When("hold", testkit.Reply{Hang: true}, testkit.Reply{Text: "claude here"}))
	agyPath, agyEnv, _ := testkit.FakeAgy(t, map[string]any{
		"turns": []map[string]any{{"steps": []any{agyAnswer("agy here\n", 12, 2)}}},
		"usage": map[string]any{"groups": []any{map[string]any{"name": "Gemini Models", "buckets": []any{map[string]any{
			"id": "gemini-weekly", "name": "Weekly Limit Remaining", "remaining_fraction": 0.9, "reset_time": "2026-12-04T08:00:00Z"}}}}},
	})
	g.env = append(g.env, agyEnv...) // agy's HOME wins; claude has its own config dir
	g.start("--backend", "combined", "--agy-path", agyPath, "--max-concurrent", "1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := make(chan error, 1)
	go func() { _, _, err := g.postCtx(ctx, prompt("hold the only claude slot")); held <- err }()
	g.waitUpstream()

	agyClient := sdk.NewClient(option.WithBaseURL(g.url+"/antigravity"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	msg, err := agyClient.Messages.New(context.Background(), agyParams("hello agy"))
	if err != nil || msg.Content[0].Text != "agy here\n" || msg.Usage.OutputTokens != 2 {
		t.Fatalf("antigravity while claude's slot is held: %v %+v", err, msg)
	}
	if _, body := testkit.Get(t, g.url+"/antigravity/v1/models"); !strings.Contains(body, "gemini-3.8-flash-low") {
		t.Fatalf("antigravity models: %s", body)
	}
	if _, body := testkit.Get(t, g.url+"/antigravity/v1/usage/quota"); !strings.Contains(body, "Gemini Models") {
		t.Fatalf("antigravity quota: %s", body)
	}
	if _, body := testkit.Get(t, g.url+"/v1/usage/quota"); strings.Contains(body, "Gemini") || !strings.Contains(body, `"plan":"get_usage"`) {
		t.Fatalf("claude's quota shows agy's: %s", body)
	}
	if _, body := testkit.Get(t, g.url+"/antigravity/v1/usage/quota"); !strings.Contains(body, `"plan":"agy -p /usage"`) {
		t.Fatalf("antigravity's quota names another source: %s", body)
	}
	// Each backend's health names its own CLI; the providers page lists
	// both, each with its own figures.
	if _, body := testkit.Get(t, g.url+"/antigravity/health"); !strings.Contains(body, `"agy":{"found":true`) || strings.Contains(body, `"claude"`) {
		t.Fatalf("antigravity health: %s", body)
	}
	_, body := testkit.Get(t, g.url+"/providers/status")
	var ps struct {
		Providers []struct {
			Backend      string `json:"backend"`
			CLIVersion   string `json:"cli_version"`
			WindowSource string `json:"window_source"`
			PlanSource   string `json:"plan_source"`
			Processes    struct {
				Slots int `json:"slots"`
			} `json:"processes"`
		} `json:"providers"`
	}
	if err := json.Unmarshal([]byte(body), &ps); err != nil || len(ps.Providers) != 3 || ps.Providers[2].Backend != "codex" ||
		ps.Providers[0].Backend != "claude" || ps.Providers[1].Backend != "antigravity" || ps.Providers[1].CLIVersion != "1.2.17" ||
		ps.Providers[1].Processes.Slots != 1 || ps.Providers[0].WindowSource != "rate_limit_event" ||
		ps.Providers[1].WindowSource != "" || ps.Providers[1].PlanSource != "agy -p /usage" {
		t.Fatalf("providers: %v %s", err, body)
	}
	cancel()
	<-held
}

// Under --backend combined the two backends share one request journal:
// the same request id and body sent to Claude and to Antigravity are two
// requests, never "an identical request is running".
func TestCombinedBackendsKeepTheirRequestsApart(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Hang: true})
	agyPath, agyEnv, _ := testkit.FakeAgy(t, map[string]any{"turns": []map[string]any{{"steps": []any{agyAnswer("agy here\n", 1, 1)}}}})
	g.env = append(g.env, agyEnv...)
	g.start("--backend", "combined", "--agy-path", agyPath)
	body := `{"model":"gemini-3.8-flash-low","max_tokens":50,"messages":[{"role":"user","content":"the same request"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Named, the default profile answers whatever model the body names.
	go func() { _, _, _ = g.postCtx(ctx, body, "Idempotency-Key", "order-1", "X-Meridian-Profile", "default") }()
	g.waitUpstream()
	resp, got := fetch(t, http.MethodPost, g.url+"/antigravity/v1/messages", body, "Content-Type", "application/json", "Idempotency-Key", "order-1")
	if resp.StatusCode != 200 || !strings.Contains(got, "agy here") {
		t.Fatalf("the same request to Antigravity: %d %s", resp.StatusCode, got)
	}
}

// One combined Meridian answers a Claude model, a GPT model and a Gemini
// model in one run on the same routes, each from its own CLI (the real
// claude, the real codex, the agy stand-in), and lists all three
// vendors' models together.
func TestCombinedByModel(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Always(testkit.Reply{Text: "claude here"})
	agyPath, agyEnv, _ := testkit.FakeAgy(t, map[string]any{
		"turns": []map[string]any{{"steps": []any{agyAnswer("agy here", 12, 2)}}},
	})
	up := testkit.NewResponsesUpstream(t, "codex", " here")
	g.env = append(g.env, agyEnv...)
	g.env = append(g.env, "CODEX_HOME="+testkit.CodexHome(t, up.URL, "gpt-test"))
	g.start("--backend", "combined", "--agy-path", agyPath, "--codex-path", testkit.CodexPath(t))

	client := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	for model, want := range map[string]string{"claude-sonnet-4-5": "claude here", "gpt-test": "codex here", "gemini-3.8-flash-low": "agy here"} {
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: 100,
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("who answers " + model + "?"))}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if got := strings.TrimSpace(msg.Content[0].Text); got != want {
			t.Errorf("%s was answered %q, want %q", model, got, want)
		}
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("codex's upstream got %d requests, want 1", n)
	}
	_, body := testkit.Get(t, g.url+"/v1/models")
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{}
	for _, m := range list.Data {
		owners[m.OwnedBy] = true
	}
	if !owners["anthropic"] || !owners["openai"] || !owners["google"] {
		t.Fatalf("/v1/models lists %v: %s", owners, body)
	}
}
