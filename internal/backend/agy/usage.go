package agy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// usageAnswer is the part of `agy -p /usage --output-format json` read
// here: per model group, its limit buckets and the share left.
type usageAnswer struct {
	Status  string `json:"status"`
	Error   string `json:"error"`
	Command struct {
		Data struct {
			Groups []struct {
				Name    string `json:"name"`
				Buckets []struct {
					ID        string   `json:"id"`
					Name      string   `json:"name"`
					Window    string   `json:"window"`
					Remaining *float64 `json:"remaining_fraction"`
					ResetTime string   `json:"reset_time"`
				} `json:"buckets"`
			} `json:"groups"`
		} `json:"data"`
	} `json:"command"`
}

// PlanUsage asks agy for its account's limits: /usage in print mode, which
// agy answers itself, spending no quota and leaving no conversation.
func (d *Driver) PlanUsage(ctx context.Context) (backend.PlanUsage, error) {
	out, stderr, err := d.run(ctx, "-p", "/usage", "--output-format", "json")
	var a usageAnswer
	if jerr := json.Unmarshal(out, &a); jerr != nil {
		if err != nil {
			if msg := lastLine(stderr); msg != "" {
				return backend.PlanUsage{}, fmt.Errorf("agy /usage: %s", msg)
			}
			return backend.PlanUsage{}, err
		}
		return backend.PlanUsage{}, fmt.Errorf("agy /usage printed no answer: %w", jerr)
	}
	if a.Status != "SUCCESS" {
		return backend.PlanUsage{}, fmt.Errorf("agy /usage: %s", a.Error)
	}
	var u backend.PlanUsage
	for _, g := range a.Command.Data.Groups {
		for _, b := range g.Buckets {
			w := backend.PlanWindow{Name: g.Name + ": " + b.Name}
			if b.Remaining != nil {
				used := (1 - *b.Remaining) * 100
				w.Utilization = &used
			}
			if t, err := time.Parse(time.RFC3339, b.ResetTime); err == nil {
				w.ResetsAt = &t
			}
			u.Windows = append(u.Windows, w)
		}
	}
	u.Available = len(u.Windows) > 0
	return u, nil
}
