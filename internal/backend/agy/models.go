package agy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
)

// efforts are the suffixes agy's model ids carry, weakest first.
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// ResolveModel implements backend.ModelResolver by agy's rules. A listed id
// or label is taken as it is: an id carries its effort, and agy passes no
// separate effort (the request's is not applied to it). A base id
// ("gemini-3.1-pro") takes the variant the request's effort names; when
// the request asks no effort but thinking with a budget, the budget picks
// one (under 8k low, under 24k medium, else high, or the nearest the model
// has); without either it is refused, naming the variants. Anything else
// is refused naming the models agy lists.
func (d *Driver) ResolveModel(model string, opts backend.StartOptions, listed []backend.Model) (string, error) {
	return resolveModel(model, opts.Effort, opts.Thinking, listed)
}

func resolveModel(model, effort string, thinking backend.Thinking, listed []backend.Model) (string, error) {
	ids := make([]string, len(listed))
	for i, m := range listed {
		if model == m.ID || model == m.Alias || model == m.DisplayName {
			return m.ID, nil
		}
		ids[i] = m.ID
	}
	var variants []string // the base id's efforts agy lists, in order
	for _, e := range efforts {
		if slices.Contains(ids, model+"-"+e) {
			variants = append(variants, e)
		}
	}
	if len(variants) == 0 {
		return "", fmt.Errorf("model %q is not one agy offers; the models are: %s", model, strings.Join(ids, ", "))
	}
	if effort == "" && thinking.Mode == backend.ThinkingEnabled && thinking.Budget > 0 {
		effort = nearest(budgetEffort(thinking.Budget), variants)
	}
	switch {
	case effort == "":
		return "", fmt.Errorf("model %q needs an effort (output_config.effort: %s), or name a variant: %s-%s",
			model, strings.Join(variants, ", "), model, strings.Join(variants, ", "+model+"-"))
	case !slices.Contains(variants, effort):
		return "", fmt.Errorf("model %q has no %q effort; it has: %s", model, effort, strings.Join(variants, ", "))
	}
	return model + "-" + effort, nil
}

// budgetEffort is the effort a thinking budget stands for.
func budgetEffort(budget int) string {
	switch {
	case budget < 8192:
		return "low"
	case budget < 24576:
		return "medium"
	}
	return "high"
}

// nearest is want if the model has it, else the closest effort it has.
func nearest(want string, have []string) string {
	w := slices.Index(efforts, want)
	best, dist := have[0], len(efforts)
	for _, h := range have {
		if d := abs(slices.Index(efforts, h) - w); d < dist {
			best, dist = h, d
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
