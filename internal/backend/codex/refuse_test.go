package codex

import (
	"errors"
	"testing"

	"github.com/meridian-gw/meridian/internal/backend/codex/appserver"
	"github.com/meridian-gw/meridian/internal/codexschema"
)

// Every request codex can make of its client has an answer that grants
// nothing: approvals are declined in each one's own terms, the rest are
// errors.
func TestEveryServerRequestIsRefused(t *testing.T) {
	proto, err := codexschema.Load()
	if err != nil {
		t.Fatal(err)
	}
	declines := map[string]string{
		"item/commandExecution/requestApproval": "decline",
		"item/fileChange/requestApproval":       "decline",
		"execCommandApproval":                   "denied",
		"applyPatchApproval":                    "denied",
	}
	methods := proto.Methods(codexschema.ServerRequest)
	if len(methods) != 10 {
		t.Fatalf("%d server requests in the recorded protocol", len(methods))
	}
	for _, m := range methods {
		answer, err := refuse(m)
		if want, ok := declines[m]; ok {
			got, _ := answer.(map[string]string)
			if err != nil || got["decision"] != want {
				t.Errorf("%s: %v %v, want decision %q", m, answer, err, want)
			}
			continue
		}
		switch m {
		case "item/permissions/requestApproval":
			got, _ := answer.(map[string]any)
			if perms, _ := got["permissions"].(map[string]any); err != nil || len(perms) != 0 || got["scope"] != "turn" {
				t.Errorf("%s granted %v", m, answer)
			}
		case "mcpServer/elicitation/request":
			if got, _ := answer.(map[string]string); err != nil || got["action"] != "decline" {
				t.Errorf("%s: %v", m, answer)
			}
		default:
			var e *appserver.Error
			if answer != nil || !errors.As(err, &e) {
				t.Errorf("%s answered %v, %v", m, answer, err)
			}
		}
	}
}
