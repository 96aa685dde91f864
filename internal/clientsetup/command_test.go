package clientsetup

import (
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	for _, c := range []struct {
		choice Choice
		want   string
	}{
		{Choice{Client: "opencode", Addr: "127.0.0.1:3456"}, "meridian setup opencode"},
		{Choice{Client: "codex", Addr: "127.0.0.1:4000", SetDefault: true}, "meridian setup codex --port 4000 --set-default"},
		{Choice{Client: "pi", Addr: "127.0.0.2:3456", KeyEnv: "MY_KEY"}, "meridian setup pi --host 127.0.0.2 --key-env MY_KEY"},
		{Choice{Client: "claude-code"}, "meridian setup claude-code"},
	} {
		got, err := Command(c.choice)
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.choice, got, err, c.want)
		}
	}
	if _, err := Command(Choice{Client: "nano; rm -rf ~"}); err == nil || !strings.Contains(err.Error(), "opencode") {
		t.Errorf("an unknown client: %v", err)
	}
	if _, err := Command(Choice{Client: "pi", KeyEnv: "$(id)"}); err == nil {
		t.Error("a variable name that is a shell expansion was taken")
	}
}
