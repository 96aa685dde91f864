package gateway

import (
	"fmt"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

// plan checks what the backend cannot do and derives the session options
// and the message to send.
func (g *Gateway) plan(req *anthropic.MessagesRequest) (backend.StartOptions, *Error) {
	last := len(req.Messages) - 1
	for last >= 0 && req.Messages[last].Role == anthropic.RoleSystem {
		last--
	}
	if last < 0 {
		return backend.StartOptions{}, InvalidRequest("messages: at least one user message is required")
	}
	if req.Messages[last].Role != anthropic.RoleUser {
		return backend.StartOptions{}, InvalidRequest(fmt.Sprintf(
			"messages.%d: the last message must be the user's; prefilling the assistant's reply is not supported by the %s backend", last, g.cfg.CLI.Backend))
	}
	if msg := checkModel(req.Model); msg != "" {
		e := InvalidRequest("model: " + msg)
		e.Param = "model"
		return backend.StartOptions{}, e
	}
	if req.Effort != "" && !validEffort(req.Effort) {
		return backend.StartOptions{}, InvalidRequest(fmt.Sprintf(
			"output_config.effort: must be one of low, medium, high, xhigh, max; got %q", req.Effort))
	}
	opts := backend.StartOptions{
		Model:           ResolveModel(req.Model),
		System:          req.System,
		Dir:             g.cfg.Workspace,
		MaxOutputTokens: req.MaxTokens,
		Effort:          req.Effort,
	}
	if t := req.Thinking; t != nil {
		switch t.Type {
		case "enabled":
			opts.Thinking = backend.Thinking{Mode: backend.ThinkingEnabled, Budget: t.BudgetTokens}
		case "adaptive":
			opts.Thinking = backend.Thinking{Mode: backend.ThinkingAdaptive}
		}
	}
	return opts, nil
}

// maxModelName bounds a model name; the longest real ids are under 100
// bytes.
const maxModelName = 256

// checkModel says what is wrong with a model name, "" when nothing: it
// becomes a CLI argument, so only printable ASCII without spaces passes.
func checkModel(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > maxModelName {
		return fmt.Sprintf("at most %d bytes, got %d", maxModelName, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Sprintf("a model name is printable ASCII without spaces; byte %d is %#x", i, c)
		}
	}
	return ""
}

func validEffort(e string) bool {
	switch e {
	case "low", "medium", "high", "xhigh", "max":
		return true
	}
	return false
}

// ResolveModel maps the model name a client sends to what the CLI takes.
// Only "default" is rewritten (to the CLI's own default model); everything
// else passes through: the CLI resolves its aliases (opus, sonnet, haiku)
// and sends full model ids as they are.
func ResolveModel(name string) string {
	if name == "default" {
		return ""
	}
	return name
}

// HonoursOutputLimit reports whether the backend bounds an answer's
// length as a request asks; when it does not, the limit is reported
// ignored.
func (g *Gateway) HonoursOutputLimit() bool {
	_, no := g.cfg.Backend.(backend.NoOutputLimit)
	return !no
}

// Ignored lists request parameters the backend cannot honour; they are
// reported to the client rather than silently pretended.
func Ignored(req *anthropic.MessagesRequest) []string {
	var out []string
	if req.Temperature != nil {
		out = append(out, "temperature")
	}
	if req.TopP != nil {
		out = append(out, "top_p")
	}
	if req.TopK != nil {
		out = append(out, "top_k")
	}
	if _, serverTools := toolsOf(req); len(serverTools) > 0 {
		out = append(out, "tools: "+strings.Join(serverTools, " "))
	}
	if len(req.ToolChoice) > 0 {
		out = append(out, "tool_choice")
	}
	return out
}
