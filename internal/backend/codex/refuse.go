package codex

import "github.com/meridian-gw/meridian/internal/backend/codex/appserver"

// refuse is Meridian's answer to one of codex's requests to its client,
// in that request's own terms: approvals are declined (the turn goes on
// without the action), an MCP server's questions are declined, and what
// has no decline (a question for the user, a tool of the client's own
// kind, a token refresh) gets an error.
func refuse(method string) (any, error) {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		return map[string]string{"decision": "decline"}, nil
	case "execCommandApproval", "applyPatchApproval":
		return map[string]string{"decision": "denied"}, nil
	case "item/permissions/requestApproval":
		// No permission granted: an empty profile, for this turn only.
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}, nil
	case "mcpServer/elicitation/request":
		return map[string]string{"action": "decline"}, nil
	}
	return nil, &appserver.Error{Code: -32000, Message: "meridian does not answer " + method + " for a gateway session"}
}
