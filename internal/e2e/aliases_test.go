package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// An alias made while meridian runs is answered by within a second:
// openai-go asking for gpt-4o is answered on the alias's model at its
// effort, /v1/models lists it beside the settings file's, and a key's
// request for "default" gets the key's default model.
func TestModelAliases(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.withPrices(t, "[aliases.quick]\nmodel = \"claude-haiku-5\"\n")
	var mu sync.Mutex
	asked := map[string]string{} // prompt → the model the CLI asked the upstream for
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		model, _ := r.Body["model"].(string)
		mu.Lock()
		defer mu.Unlock()
		for _, p := range []string{"via alias", "via default"} {
			if strings.Contains(string(r.RawBody), p) {
				asked[p] = model
			}
		}
		return testkit.Reply{Text: "ok"}
	})
	g.start()
	cmd := exec.Command(g.bin, "alias", "add", "gpt-4o", "claude-sonnet-5", "--effort", "low", "--data-dir", g.dataDir)
	cmd.Env = g.env
	if out, code := combined(t, cmd); code != 0 {
		t.Fatalf("alias add: %s", out)
	}
	c := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
	ctx := context.Background()
	var resp *http.Response
	if err := testkit.WaitFor(5*time.Second, func() error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("answer via alias")}}, oaioption.WithResponseInto(&resp))
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if asked["via alias"] != "claude-sonnet-5" {
			return fmt.Errorf("the upstream was asked for %q", asked["via alias"])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Meridian-Model"); got != "claude-sonnet-5" {
		t.Fatalf("X-Meridian-Model = %q", got)
	}
	var effort string
	for _, r := range g.up.Requests() {
		if strings.Contains(string(r.RawBody), "via alias") {
			effort = string(r.RawBody)
		}
	}
	if !strings.Contains(effort, `"effort":"low"`) {
		t.Fatalf("the alias's effort did not reach the upstream: %s", effort)
	}
	models, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID+"/"+string(m.OwnedBy))
	}
	if !slices.Contains(ids, "gpt-4o/meridian") || !slices.Contains(ids, "quick/meridian") {
		t.Fatalf("/v1/models lists %v, want gpt-4o and quick owned by meridian", ids)
	}
	// A key's default model answers its requests for "default".
	key := g.addKey(t, "", "laptop", "--default-model", "quick")
	if resp, body, err := g.post(strings.Replace(prompt("answer via default"), `"test-model"`, `"default"`, 1), "X-Api-Key", key); err != nil || resp.StatusCode != 200 {
		t.Fatalf("default: %v %s", err, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["via default"] != "claude-haiku-5" {
		t.Fatalf("a key's default model through the settings' alias: the upstream was asked for %q", asked["via default"])
	}
}
