package httpapi_test

import (
	"context"
	"net/http"
	"testing"
)

func TestHealthReportsTheRealCLI(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	var h struct {
		Status string `json:"status"`
		Claude struct {
			Found   bool   `json:"found"`
			Version string `json:"version"`
			Auth    struct {
				LoggedIn bool   `json:"logged_in"`
				Method   string `json:"method"`
			} `json:"auth"`
		} `json:"claude"`
		Processes struct {
			Max int `json:"max"`
		} `json:"processes"`
	}
	resp := getJSON(t, s.URL+"/health", nil, &h)
	if resp.StatusCode != 200 || h.Status != "ok" || !h.Claude.Found || h.Claude.Version == "" ||
		!h.Claude.Auth.LoggedIn || h.Claude.Auth.Method != "api_key" || h.Processes.Max != 10 {
		t.Fatalf("health = %d %+v", resp.StatusCode, h)
	}
}

func TestModelsInBothShapes(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{})
	// The official Anthropic SDK sends anthropic-version: Anthropic shape.
	page, err := s.client().Models.List(context.Background(), sdkModelListParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) == 0 {
		t.Fatal("no models listed")
	}
	ids := map[string]bool{}
	for _, m := range page.Data {
		if m.ID == "" || m.DisplayName == "" {
			t.Fatalf("incomplete model entry %+v", m)
		}
		ids[m.ID] = true
	}
	if !ids["opus"] || !ids["sonnet"] || !ids["haiku"] {
		t.Fatalf("aliases missing from %v", ids)
	}
	// Without Anthropic headers: the OpenAI list shape.
	var oa struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	resp := getJSON(t, s.URL+"/v1/models", nil, &oa)
	if resp.StatusCode != http.StatusOK || oa.Object != "list" || len(oa.Data) != len(page.Data) || oa.Data[0].Object != "model" {
		t.Fatalf("OpenAI shape = %d %+v", resp.StatusCode, oa)
	}
	one, err := s.client().Models.Get(context.Background(), page.Data[0].ID, sdkModelGetParams())
	if err != nil || one.ID != page.Data[0].ID {
		t.Fatalf("get model: %v %+v", err, one)
	}
	// The official OpenAI SDK gets the OpenAI shape, and a missing model
	// is a 404 in its shape.
	oaPage, err := s.chatClient().Models.List(context.Background())
	if err != nil || len(oaPage.Data) != len(page.Data) || oaPage.Data[0].OwnedBy != "anthropic" {
		t.Fatalf("OpenAI SDK list: %v %+v", err, oaPage)
	}
	if m, err := s.chatClient().Models.Get(context.Background(), "opus"); err != nil || m.ID != "opus" {
		t.Fatalf("OpenAI SDK get: %v %+v", err, m)
	}
	_, err = s.chatClient().Models.Get(context.Background(), "no-such-model")
	if ae := chatAPIError(t, err); ae.StatusCode != 404 || ae.Type != "invalid_request_error" {
		t.Fatalf("missing model: %d %s", ae.StatusCode, ae.RawJSON())
	}
}
