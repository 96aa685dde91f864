package failover

import (
	"strings"
	"sync"
	"time"
)

// The extended-context variant of a model is its name with this suffix
// ("opus[1m]", "claude-sonnet-4-5[1m]"); the CLI sends the base model with
// the long-context beta.
const longSuffix = "[1m]"

// IsLong reports whether model names an extended-context variant.
func IsLong(model string) bool {
	return len(model) > len(longSuffix) && strings.EqualFold(model[len(model)-len(longSuffix):], longSuffix)
}

// Standard is the standard-context model of a variant.
func Standard(model string) string {
	if !IsLong(model) {
		return model
	}
	return model[:len(model)-len(longSuffix)]
}

// Refusal is why an extended-context request was refused.
type Refusal int

const (
	// NotLong: the refusal is not about the variant (or there was none).
	NotLong Refusal = iota
	// Entitlement: the account may not use long context now (Extra Usage
	// is off or spent). A fact about the account: every conversation of
	// the profile would be refused alike.
	Entitlement
	// RateLimited: a plain rate limit hit while on the variant.
	RateLimited
)

// entitlementCode is the CLI's own name for the entitlement refusal, which
// it reports on subscription logins (where it rewrites the message).
const entitlementCode = "model_requires_usage_credits"

// Classify says why a request for model failed with the upstream status,
// message and the CLI's error code. Only a request for a variant can be a
// long-context refusal.
func Classify(model string, status int, message, code string) Refusal {
	if !IsLong(model) {
		return NotLong
	}
	m := strings.ToLower(message)
	if code == entitlementCode || strings.Contains(m, "long context") &&
		(strings.Contains(m, "extra usage") || strings.Contains(m, "usage credits")) {
		return Entitlement
	}
	if status == 429 {
		return RateLimited
	}
	return NotLong
}

// How long the variant stays benched when the refusal named no reset. An
// entitlement does not come back within minutes; a conversation moved to
// the standard model should not flap back and lose its cache twice.
const (
	EntitlementBench  = time.Hour
	ConversationBench = time.Hour
)

// maxConversations bounds the conversations benched at once; past it the
// one reopening soonest is forgotten.
const maxConversations = 4096

// LongBench records, for one profile, where its extended-context variants
// are benched: profile-wide (an entitlement, or a rate limit of a request
// that belongs to no conversation) or for single conversations (a rate
// limit: its siblings keep their variant and their warm caches).
type LongBench struct {
	mu      sync.Mutex
	profile time.Time
	convs   map[string]time.Time
}

// Put benches the variant after refusal r of a request of conversation
// ("" when it has none) until now+wait, or the default for its scope when
// wait is 0. It reports whether the bench is profile-wide, and until when.
func (b *LongBench) Put(r Refusal, conversation string, now time.Time, wait time.Duration) (profileWide bool, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case r == Entitlement:
		b.profile = later(b.profile, now.Add(or(wait, EntitlementBench)))
		return true, b.profile
	case r == RateLimited && conversation == "":
		b.profile = later(b.profile, now.Add(or(wait, DefaultBench)))
		return true, b.profile
	case r == RateLimited:
		if b.convs == nil {
			b.convs = map[string]time.Time{}
		}
		b.prune(now)
		b.convs[conversation] = later(b.convs[conversation], now.Add(or(wait, ConversationBench)))
		return false, b.convs[conversation]
	}
	return false, time.Time{}
}

// Benched reports whether a request of conversation must use the standard
// model now.
func (b *LongBench) Benched(conversation string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.profile.After(now) || conversation != "" && b.convs[conversation].After(now)
}

// prune forgets reopened conversations and, over the bound, the one that
// reopens soonest.
func (b *LongBench) prune(now time.Time) {
	for k, t := range b.convs {
		if !t.After(now) {
			delete(b.convs, k)
		}
	}
	for len(b.convs) >= maxConversations {
		first := ""
		for k, t := range b.convs {
			if first == "" || t.Before(b.convs[first]) {
				first = k
			}
		}
		delete(b.convs, first)
	}
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
