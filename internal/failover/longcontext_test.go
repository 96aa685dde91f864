package failover

import (
	"fmt"
	"testing"
	"time"
)

func TestClassifyLongContextRefusals(t *testing.T) {
	for _, c := range []struct {
		model, message, code string
		status               int
		want                 Refusal
	}{
		{"claude-sonnet-4-5[1m]", "API Error: Request rejected (429) · Extra usage is required for long context requests.", "", 429, Entitlement},
		{"opus[1M]", "Usage credits are required for long context requests", "", 400, Entitlement},
		{"opus[1m]", "You're out of extra usage · run /extra-usage", "model_requires_usage_credits", 429, Entitlement},
		{"opus[1m]", "rate limited", "", 429, RateLimited},
		{"opus[1m]", "overloaded", "", 529, NotLong},
		{"opus", "Extra usage is required for long context requests.", "", 429, NotLong},
		{"[1m]", "rate limited", "", 429, NotLong},
	} {
		if got := Classify(c.model, c.status, c.message, c.code); got != c.want {
			t.Errorf("Classify(%q, %d, %q, %q) = %d, want %d", c.model, c.status, c.message, c.code, got, c.want)
		}
	}
	if Standard("claude-opus-4-7[1m]") != "claude-opus-4-7" || Standard("opus") != "opus" {
		t.Fatal("Standard")
	}
}

// An entitlement benches the profile; a rate limit only its conversation,
// unless the request had none.
func TestLongBenchScopes(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var b LongBench
	if wide, until := b.Put(RateLimited, "conv-1", t0, 0); wide || !until.Equal(t0.Add(ConversationBench)) {
		t.Fatalf("rate limit: wide %v until %v", wide, until)
	}
	if !b.Benched("conv-1", t0) || b.Benched("conv-2", t0) || b.Benched("", t0) {
		t.Fatal("a rate limit reached beyond its conversation")
	}
	if b.Benched("conv-1", t0.Add(ConversationBench)) {
		t.Fatal("the conversation's bench never ends")
	}
	var nc LongBench
	if wide, _ := nc.Put(RateLimited, "", t0, 20*time.Second); !wide || !nc.Benched("conv-9", t0.Add(10*time.Second)) || nc.Benched("", t0.Add(20*time.Second)) {
		t.Fatal("a request without a conversation benches the profile for its wait")
	}
	var e LongBench
	if wide, until := e.Put(Entitlement, "conv-1", t0, 0); !wide || !until.Equal(t0.Add(EntitlementBench)) {
		t.Fatalf("entitlement: wide %v until %v", wide, until)
	}
	if !e.Benched("conv-2", t0.Add(time.Minute)) || !e.Benched("", t0.Add(time.Minute)) {
		t.Fatal("an entitlement did not bench the profile")
	}
}

func TestLongBenchIsBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var b LongBench
	for i := range maxConversations + 10 {
		b.Put(RateLimited, fmt.Sprint("c", i), t0, time.Duration(i+1)*time.Second)
	}
	if len(b.convs) > maxConversations || b.Benched("c0", t0) || !b.Benched(fmt.Sprint("c", maxConversations+9), t0) {
		t.Fatalf("%d benched; the soonest to reopen should go first", len(b.convs))
	}
}
