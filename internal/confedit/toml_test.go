package confedit

import (
	"errors"
	"strings"
	"testing"
)

func codexEdits(base string) []Edit {
	return []Edit{
		{Path: []string{"model_providers", "meridian", "name"}, Value: "Meridian"},
		{Path: []string{"model_providers", "meridian", "base_url"}, Value: base},
		{Path: []string{"model_providers", "meridian", "wire_api"}, Value: "responses"},
		{Path: []string{"model_provider"}, Value: "meridian"},
		{Path: []string{"model"}, Value: "sonnet"},
	}
}

func TestTOMLKeepsEverythingElse(t *testing.T) {
	src := `# my codex
model = "gpt-5" # the usual
approval_policy = "on-request"
sandbox_mode = [
  "a",
  "[not a header]",
]

# the tools I trust
[mcp_servers.docs]
command = "docs-mcp"
`
	out, err := TOML([]byte(src), codexEdits("http://127.0.0.1:3456/v1"))
	if err != nil {
		t.Fatal(err)
	}
	want := `# my codex
model = "sonnet" # the usual
approval_policy = "on-request"
sandbox_mode = [
  "a",
  "[not a header]",
]
model_provider = "meridian"

# the tools I trust
[mcp_servers.docs]
command = "docs-mcp"

[model_providers.meridian]
name = "Meridian"
base_url = "http://127.0.0.1:3456/v1"
wire_api = "responses"
`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	again, err := TOML(out, codexEdits("http://127.0.0.1:3456/v1"))
	if err != nil || string(again) != string(out) {
		t.Fatalf("second run changed it (%v):\n%s", err, again)
	}
	moved, err := TOML(out, codexEdits("http://127.0.0.1:4000/v1"))
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff("config.toml", out, moved, true); strings.Count(d, "\n-") != 1 || !strings.Contains(d, "+base_url = \"http://127.0.0.1:4000/v1\"") {
		t.Fatalf("a changed port rewrote more than its line:\n%s", d)
	}
}

func TestTOMLNewFile(t *testing.T) {
	out, err := TOML(nil, codexEdits("http://x/v1"))
	if err != nil {
		t.Fatal(err)
	}
	want := "model_provider = \"meridian\"\nmodel = \"sonnet\"\n\n[model_providers.meridian]\nname = \"Meridian\"\nbase_url = \"http://x/v1\"\nwire_api = \"responses\"\n"
	if string(out) != want {
		t.Fatalf("got\n%s", out)
	}
}

func TestTOMLRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		line int
		msg  string
	}{
		"malformed":    {"model = \"a\"\n[x\n", 2, ""},
		"inline table": {"model_providers = { meridian = { name = \"M\" } }\n", 1, "without its own"},
		"dotted keys":  {"model_providers.meridian.name = \"M\"\n", 1, "without its own"},
		"not a table":  {"model_providers = 3\n", 1, "not a table"},
		"multi-line":   {"model = \"\"\"\na\n\"\"\"\n", 1, "one-line"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := TOML([]byte(tc.src), codexEdits("http://x/v1"))
			var e *Error
			if !errors.As(err, &e) || e.Line != tc.line || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %v, want line %d %q", err, tc.line, tc.msg)
			}
		})
	}
}

// Drop removes a table whole, leaving what surrounds it as it was, and is
// no change where the table is absent; a table it cannot remove whole is
// refused.
func TestTOMLDropsATable(t *testing.T) {
	src := "# mine\nmodel = \"o3\"\n\n[profiles.meridian]\nmodel_provider = \"meridian\" # set up\nmodel = \"sonnet\"\n\n[profiles.fast]\nmodel = \"mini\"\n"
	drop := []Edit{{Path: []string{"profiles", "meridian"}, Drop: true}}
	out, err := TOML([]byte(src), drop)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# mine\nmodel = \"o3\"\n\n[profiles.fast]\nmodel = \"mini\"\n"; string(out) != want {
		t.Fatalf("got\n%s", out)
	}
	if again, err := TOML(out, drop); err != nil || string(again) != string(out) {
		t.Fatalf("dropping an absent table changed the file: %v\n%s", err, again)
	}
	for name, src := range map[string]string{
		"inline":     "profiles = { meridian = { model = \"x\" } }\n",
		"sub-tables": "[profiles.meridian]\nmodel = \"x\"\n[profiles.meridian.features]\nweb = true\n",
	} {
		if _, err := TOML([]byte(src), drop); err == nil {
			t.Errorf("%s: a table it cannot remove whole was removed in part", name)
		}
	}
}
