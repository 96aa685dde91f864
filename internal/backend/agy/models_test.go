package agy

import (
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend"
)

func TestResolveModel(t *testing.T) {
	listed := []backend.Model{
		{ID: "gemini-3.8-flash-high", DisplayName: "Gemini 3.8 Flash (High)"}, {ID: "gemini-3.8-flash-medium"}, {ID: "gemini-3.8-flash-low"},
		{ID: "gemini-3.1-pro-high"}, {ID: "gemini-3.1-pro-low"}, {ID: "claude-sonnet-4-6"},
	}
	budget := func(n int) backend.Thinking { return backend.Thinking{Mode: backend.ThinkingEnabled, Budget: n} }
	for _, c := range []struct {
		model, effort string
		thinking      backend.Thinking
		want, err     string
	}{
		{model: "gemini-3.8-flash-low", want: "gemini-3.8-flash-low"},
		{model: "gemini-3.8-flash-low", effort: "high", want: "gemini-3.8-flash-low"}, // an id carries its effort
		{model: "Gemini 3.8 Flash (High)", want: "gemini-3.8-flash-high"},
		{model: "claude-sonnet-4-6", effort: "high", want: "claude-sonnet-4-6"},
		{model: "gemini-3.1-pro", effort: "high", want: "gemini-3.1-pro-high"},
		{model: "gemini-3.8-flash", thinking: budget(16000), want: "gemini-3.8-flash-medium"},
		{model: "gemini-3.1-pro", thinking: budget(16000), want: "gemini-3.1-pro-low"}, // the nearest it has
		{model: "gemini-3.1-pro", thinking: budget(32000), want: "gemini-3.1-pro-high"},
		{model: "gemini-3.1-pro", err: `needs an effort (output_config.effort: low, high), or name a variant: gemini-3.1-pro-low, gemini-3.1-pro-high`},
		{model: "gemini-3.1-pro", effort: "max", err: `has no "max" effort; it has: low, high`},
		{model: "gpt-9", err: "is not one agy offers; the models are: gemini-3.8-flash-high, gemini-3.8-flash-medium"},
	} {
		got, err := resolveModel(c.model, c.effort, c.thinking, listed)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s/%s: %q %v, want an error with %q", c.model, c.effort, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s/%s/%v: %q %v, want %q", c.model, c.effort, c.thinking, got, err, c.want)
		}
	}
}
