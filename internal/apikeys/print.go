package apikeys

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// PrintTable writes keys one a line: name, status, scope, limits.
func PrintTable(w io.Writer, views []View) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tPROFILES\tMODELS\tLIMITS\tEXPIRES")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Status, orAny(v.Profiles), orAny(v.Models), LimitsText(v), date(v.Expires))
	}
	return tw.Flush()
}

// PrintOne writes one key in full; a key just made is shown with how to
// use it.
func PrintOne(w io.Writer, v View) error {
	var b strings.Builder
	if v.Key != "" {
		fmt.Fprintf(&b, "key %s: %s\n", v.Name, v.Key)
		b.WriteString("  shown once: only its digest is kept. Clients send it as x-api-key or Authorization: Bearer.\n")
	} else {
		fmt.Fprintf(&b, "key %s\n", v.Name)
	}
	fmt.Fprintf(&b, "  status:   %s\n  profiles: %s\n  models:   %s\n  limits:   %s\n  created:  %s\n",
		v.Status, orAny(v.Profiles), orAny(v.Models), LimitsText(v), v.Created.Format(time.DateTime+" UTC"))
	if v.Capture != "" {
		fmt.Fprintf(&b, "  capture:  %s\n", v.Capture)
	}
	if v.DefaultModel != "" {
		fmt.Fprintf(&b, "  default model: %s\n", v.DefaultModel)
	}
	if v.Expires != nil {
		fmt.Fprintf(&b, "  expires:  %s\n", v.Expires.Format(time.DateTime+" UTC"))
	}
	if v.Rotated != nil {
		fmt.Fprintf(&b, "  rotated:  %s\n", v.Rotated.Format(time.DateTime+" UTC"))
	}
	if v.Revoked != nil {
		fmt.Fprintf(&b, "  revoked:  %s\n", v.Revoked.Format(time.DateTime+" UTC"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orAny(vs []string) string {
	if len(vs) == 0 {
		return "any"
	}
	return strings.Join(vs, ",")
}

// LimitsText says a key's limits in a few words ("none" without any).
func LimitsText(v View) string {
	var parts []string
	if v.RPM > 0 {
		parts = append(parts, fmt.Sprintf("%d/min", v.RPM))
	}
	if v.Concurrent > 0 {
		parts = append(parts, fmt.Sprintf("%d at once", v.Concurrent))
	}
	if v.TokensPerDay > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens/day", v.TokensPerDay))
	}
	if v.Budget > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f/%s (alert at $%.2f)", v.Budget, v.Per, v.BudgetAlert))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func date(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.DateOnly)
}
