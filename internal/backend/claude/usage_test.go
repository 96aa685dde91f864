package claude

import (
	"encoding/json"
	"testing"
	"time"
)

// A subscriber's get_usage answer, in the shape the CLI's protocol
// describes: the plan's windows in a stable order, model buckets by their
// label, the extra-usage allowance beside them.
func TestParseUsage(t *testing.T) {
	raw := json.RawMessage(`{"session":{"total_cost_usd":0},"subscription_type":"max","rate_limits_available":true,
		"rate_limits":{"seven_day":{"utilization":41,"resets_at":"2026-12-04T10:00:00Z"},
			"five_hour":{"utilization":12.5,"resets_at":"2026-11-30T20:00:00Z"},
			"seven_day_opus":null,
			"model_scoped":[{"display_name":"Fable","utilization":3,"resets_at":null}],
			"extra_usage":{"is_enabled":true,"monthly_limit":50,"used_credits":12,"utilization":24,"currency":"USD"}},
		"behaviors":null}`)
	u, err := parseUsage(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Subscription != "max" || !u.Available || len(u.Windows) != 3 {
		t.Fatalf("%+v", u)
	}
	names := u.Windows[0].Name + " " + u.Windows[1].Name + " " + u.Windows[2].Name
	if names != "five_hour seven_day Fable" {
		t.Fatalf("windows %s", names)
	}
	if *u.Windows[0].Utilization != 12.5 || !u.Windows[0].ResetsAt.Equal(time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)) || u.Windows[2].ResetsAt != nil {
		t.Fatalf("five_hour %+v", u.Windows[0])
	}
	if e := u.ExtraUsage; e == nil || !e.Enabled || *e.UsedCredits != 12 || e.Currency != "USD" {
		t.Fatalf("extra usage %+v", e)
	}
	// An API key: no plan limits apply.
	u, err = parseUsage(json.RawMessage(`{"subscription_type":null,"rate_limits_available":false,"rate_limits":null}`))
	if err != nil || u.Available || len(u.Windows) != 0 || u.Subscription != "" {
		t.Fatalf("api key: %+v %v", u, err)
	}
}
