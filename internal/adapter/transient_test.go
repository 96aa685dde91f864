package adapter

import (
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

func text(s string) anthropic.ContentBlock {
	return anthropic.ContentBlock{Type: anthropic.BlockText, Text: s}
}

// Only a complete envelope of known hook output is OpenCode's per-turn
// block; anything else a user message says is the user's.
func TestHookEnvelopes(t *testing.T) {
	for _, c := range []struct {
		name  string
		block anthropic.ContentBlock
		want  bool
	}{
		{"added context", text(`<user-prompt-submit-hook>{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"branch main, 3 files changed"}}</user-prompt-submit-hook>`), true},
		{"control fields", text("\n<user-prompt-submit-hook>{\"continue\":true,\"suppressOutput\":false}</user-prompt-submit-hook>\n"), true},
		{"both", text(`<user-prompt-submit-hook>{"continue":true,"hookSpecificOutput":{"hookEventName":"UserPromptSubmit"}}</user-prompt-submit-hook>`), true},
		{"an unknown field", text(`<user-prompt-submit-hook>{"continue":true,"plan":"x"}</user-prompt-submit-hook>`), false},
		{"another event", text(`<user-prompt-submit-hook>{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"x"}}</user-prompt-submit-hook>`), false},
		{"malformed JSON", text(`<user-prompt-submit-hook>{"continue":tru</user-prompt-submit-hook>`), false},
		{"two objects", text(`<user-prompt-submit-hook>{"continue":true}{"continue":true}</user-prompt-submit-hook>`), false},
		{"empty object", text(`<user-prompt-submit-hook>{}</user-prompt-submit-hook>`), false},
		{"prose around", text(`note: <user-prompt-submit-hook>{"continue":true}</user-prompt-submit-hook>`), false},
		{"unclosed", text(`<user-prompt-submit-hook>{"continue":true}`), false},
		{"plain prose", text("continue with the tests"), false},
		{"not text", anthropic.ContentBlock{Type: anthropic.BlockImage}, false},
	} {
		if got := hookEnvelope(c.block); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Lineage leaves envelopes out of OpenCode's user messages that keep a
// block of their own; a hook-only message and the assistant's lookalikes
// stay whole, and other clients keep every block.
func TestDurableMessages(t *testing.T) {
	env := text(`<user-prompt-submit-hook>{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"turn context"}}</user-prompt-submit-hook>`)
	msgs := []anthropic.Message{
		{Role: anthropic.RoleUser, Content: []anthropic.ContentBlock{env, text("fix the build")}},
		{Role: anthropic.RoleAssistant, Content: []anthropic.ContentBlock{env, text("done")}},
		{Role: anthropic.RoleUser, Content: []anthropic.ContentBlock{env}},
		{Role: anthropic.RoleUser, Content: []anthropic.ContentBlock{text("next"), env, text("more")}},
	}
	got := Durable(TransientOf(openCode{}), msgs)
	lens := [4]int{len(got[0].Content), len(got[1].Content), len(got[2].Content), len(got[3].Content)}
	if lens != [4]int{1, 2, 1, 2} {
		t.Fatalf("durable block counts %v, want [1 2 1 2]", lens)
	}
	if got[0].Content[0].Text != "fix the build" || got[3].Content[1].Text != "more" {
		t.Fatalf("durable blocks %+v", got)
	}
	if len(msgs[0].Content) != 2 {
		t.Fatal("Durable changed the request's own messages")
	}
	if other := Durable(TransientOf(claudeCode{}), msgs); len(other[0].Content) != 2 {
		t.Fatal("another client's envelopes were left out")
	}
}
