package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// tokens is one of codex's token counts (thread/tokenUsage/updated).
type tokens struct {
	InputTokens           int `json:"inputTokens"`
	CachedInputTokens     int `json:"cachedInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
	OutputTokens          int `json:"outputTokens"`
}

// since is what was spent between prev and t, as the gateway counts:
// input not read from the cache, input read from it, output.
func (t tokens) since(prev tokens) backend.Usage {
	in := t.InputTokens - prev.InputTokens
	cached := t.CachedInputTokens - prev.CachedInputTokens
	return backend.Usage{InputTokens: max(in-cached, 0), CacheReadInputTokens: max(cached, 0),
		CacheCreationInputTokens: max(t.CacheWriteInputTokens-prev.CacheWriteInputTokens, 0),
		OutputTokens:             max(t.OutputTokens-prev.OutputTokens, 0)}
}

// rateLimits is account/rateLimits/updated: the plan's two windows, each
// with the share used and its reset.
type rateLimits struct {
	RateLimits struct {
		LimitID   string       `json:"limitId"`
		Primary   *limitWindow `json:"primary"`
		Secondary *limitWindow `json:"secondary"`
		Reached   *string      `json:"rateLimitReachedType"`
	} `json:"rateLimits"`
}

type limitWindow struct {
	UsedPercent int    `json:"usedPercent"`
	Minutes     *int64 `json:"windowDurationMins"`
	ResetsAt    *int64 `json:"resetsAt"` // unix seconds
}

// windowName names a window by its length as the accounts figures do.
func windowName(minutes *int64) string {
	switch {
	case minutes == nil:
		return "codex"
	case *minutes == 300:
		return "five_hour"
	case *minutes == 7*24*60:
		return "seven_day"
	}
	return fmt.Sprintf("codex_%dm", *minutes)
}

// event is the RateLimit event of an update that carries windows (nil
// for one that carries none: an API key's).
func (r rateLimits) event() *backend.Event {
	ev := &backend.Event{Kind: backend.RateLimit, LimitStatus: "allowed"}
	for _, w := range []*limitWindow{r.RateLimits.Primary, r.RateLimits.Secondary} {
		if w == nil {
			continue
		}
		lw := backend.LimitWindow{Type: windowName(w.Minutes), Status: "allowed", Utilization: float64(w.UsedPercent) / 100}
		if w.ResetsAt != nil {
			lw.ResetsAt = time.Unix(*w.ResetsAt, 0)
		}
		if w.UsedPercent >= 100 {
			lw.Status = "rejected"
		}
		ev.Windows = append(ev.Windows, lw)
		// The event is about the fullest window.
		if len(ev.Windows) == 1 || lw.Utilization > ev.Utilization {
			ev.LimitType, ev.Utilization, ev.ResetsAt, ev.LimitStatus = lw.Type, lw.Utilization, lw.ResetsAt, lw.Status
		}
	}
	if len(ev.Windows) == 0 {
		return nil
	}
	return ev
}

// turnError is codex's error of a failed turn (or of an error
// notification).
type turnError struct {
	Message string          `json:"message"`
	Info    json.RawMessage `json:"codexErrorInfo"`
	Details *string         `json:"additionalDetails"`
}

// status is the HTTP status codex's error info carries, 0 for none.
func (e *turnError) status() (string, int) {
	var name string
	if json.Unmarshal(e.Info, &name) == nil {
		return name, 0
	}
	var withStatus map[string]struct {
		Status *int `json:"httpStatusCode"`
	}
	if json.Unmarshal(e.Info, &withStatus) == nil {
		for k, v := range withStatus {
			if v.Status != nil {
				return k, *v.Status
			}
			return k, 0
		}
	}
	return "", 0
}

// failure classifies a failed turn for the gateway; resets is when the
// fullest rate-limit window seen last opens again.
func (e *turnError) failure(resets time.Time) *backend.Failure {
	kind, status := e.status()
	msg := e.Message
	if e.Details != nil && *e.Details != "" && !strings.Contains(msg, *e.Details) {
		msg += ": " + *e.Details
	}
	f := &backend.Failure{Kind: backend.FailUpstream, Message: msg, Code: kind, Status: status}
	switch kind {
	case "contextWindowExceeded":
		f.Kind, f.Status, f.Type = backend.FailPromptTooLong, http.StatusBadRequest, "invalid_request_error"
	case "usageLimitExceeded", "rateLimitExceeded":
		f.Status, f.Type, f.ResetsAt = http.StatusTooManyRequests, "rate_limit_error", resets
	case "serverOverloaded":
		f.Status, f.Type = 529, "overloaded_error"
	case "unauthorized":
		f.Status, f.Type = http.StatusUnauthorized, "authentication_error"
	case "badRequest", "modelNotFound":
		f.Status, f.Type = http.StatusBadRequest, "invalid_request_error"
	case "sessionBudgetExceeded", "tooManyDenials":
		f.Kind = backend.FailLimit
	case "sandboxError", "threadRollbackFailed":
		f.Kind = backend.FailBackend
	default:
		switch {
		case status == http.StatusTooManyRequests:
			f.Type, f.ResetsAt = "rate_limit_error", resets
		case status >= 400 && status < 500:
			f.Type = "invalid_request_error"
		case status == 0:
			f.Status, f.Type = http.StatusBadGateway, "api_error"
		default:
			f.Type = "api_error"
		}
	}
	return f
}

// PlanUsage asks a short-lived app-server for account/rateLimits/read:
// the plan's windows as codex last learned them (a ChatGPT login's; an
// API key has none).
func (d *Driver) PlanUsage(ctx context.Context) (backend.PlanUsage, error) {
	var out struct {
		RateLimits struct {
			Primary   *limitWindow `json:"primary"`
			Secondary *limitWindow `json:"secondary"`
			PlanType  *string      `json:"planType"`
		} `json:"rateLimits"`
	}
	if err := d.ask(ctx, "account/rateLimits/read", map[string]any{"excludeResetCreditDetails": true}, &out); err != nil {
		return backend.PlanUsage{}, err
	}
	var u backend.PlanUsage
	if out.RateLimits.PlanType != nil {
		u.Subscription = *out.RateLimits.PlanType
	}
	for _, w := range []*limitWindow{out.RateLimits.Primary, out.RateLimits.Secondary} {
		if w == nil {
			continue
		}
		used := float64(w.UsedPercent)
		pw := backend.PlanWindow{Name: windowName(w.Minutes), Utilization: &used}
		if w.ResetsAt != nil {
			t := time.Unix(*w.ResetsAt, 0)
			pw.ResetsAt = &t
		}
		u.Windows = append(u.Windows, pw)
	}
	u.Available = len(u.Windows) > 0
	return u, nil
}
