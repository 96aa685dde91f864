package probe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The day's cost comes rounded to the hundredth of a cent, as the text
// prints it: the estimate is no finer, and JSON readers need not round.
func TestTheDaysCostIsRounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			_ = json.NewEncoder(w).Encode(map[string]any{"service": "meridian", "version": "v1", "pid": 7})
		case "/health":
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok"})
		case "/telemetry/summary":
			_, _ = w.Write([]byte(`{"totals":{"requests":3,"errors":0,"cost_usd":0.012345678901}}`))
		}
	}))
	defer srv.Close()
	r, err := Probe(context.Background(), srv.URL, "")
	if err != nil || r.Today == nil {
		t.Fatalf("%+v %v", r, err)
	}
	if r.Today.Cost != 0.0123 {
		t.Fatalf("cost %v", r.Today.Cost)
	}
}
