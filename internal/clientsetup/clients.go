package clientsetup

import (
	_ "embed"
	"path/filepath"
	"strings"

	"github.com/meridian-gw/meridian/internal/confedit"
)

// Target is the Meridian a client is pointed at.
type Target struct {
	BaseURL string // http://host:port, no path
	// Key is a Meridian API key written into the client's configuration
	// itself (meridian setup --key); its files are then kept private.
	Key string
	// KeyEnv names the variable holding the Meridian's API key when it
	// requires one; clients that can read a key from the environment are
	// told its name, never its value. Key, when set, wins.
	KeyEnv     string
	Models     []string // offered to the client, the first being the default
	SetDefault bool     // make Meridian the client's default provider and model
}

// openCodePlugin names the agent behind each request and gives it an id
// that survives OpenCode's retries (see the file).
//
//go:embed integrations/opencode-meridian.ts
var openCodePlugin []byte

// piExtension gives each request an id chosen before the SDK's retries,
// kept for an exact retry of a failed turn (see the file).
//
//go:embed integrations/pi-meridian.ts
var piExtension []byte

// piSpawnWatch tells a Pi session which of its spawns finished, and acks
// each delivery when Pi admits it (see the file).
//
//go:embed integrations/pi-spawn-watch.ts
var piSpawnWatch []byte

// placeholderKey is what a client that insists on a key gets from a
// Meridian that needs none.
const placeholderKey = "meridian"

// storedAuth is what OpenCode's credential store holds for the Meridian
// provider: a marker, never a key.
const storedAuth = "unused: opencode.json's provider.meridian.options.apiKey is sent"

// format is how a configuration file is written.
type format int

const (
	jsonc format = iota
	tomlFile
	verbatim // a file Meridian owns whole: a client integration
)

// fileEdit is what one client needs changed in one of its files.
type fileEdit struct {
	path    string
	format  format
	edits   []confedit.Edit
	content []byte // verbatim only
	secret  bool   // holds a key: written readable by its owner only
}

// Client is one client Meridian knows how to configure.
type Client struct {
	Name  string // what `meridian setup NAME` takes
	Title string
	plan  func(t Target, l locator) ([]fileEdit, []string)
}

// Clients is every client setup handles, in the order help lists them.
func Clients() []Client {
	return []Client{
		{"claude-code", "Claude Code", claudeCode},
		{"opencode", "OpenCode", openCode},
		{"codex", "Codex", codex},
		{"pi", "Pi", pi},
		{"crush", "Crush", crush},
		{"droid", "Droid", droid},
	}
}

// locator finds where a client reads its configuration, honouring the
// client's own environment overrides.
type locator struct {
	env    map[string]string
	home   string
	exists func(string) bool
}

func (l locator) dir(envName string, def ...string) string {
	if v := l.env[envName]; v != "" {
		return v
	}
	return filepath.Join(append([]string{l.home}, def...)...)
}

func (l locator) xdgConfig() string { return l.dir("XDG_CONFIG_HOME", ".config") }

// key is what a client's key setting holds: the key itself, a reference
// to the variable in the client's own syntax (ref, with VAR for the
// name), or the placeholder.
func (t Target) key(ref string) string {
	switch {
	case t.Key != "":
		return t.Key
	case t.KeyEnv != "":
		return strings.ReplaceAll(ref, "VAR", t.KeyEnv)
	}
	return placeholderKey
}

func (t Target) defaultModel() string {
	if len(t.Models) == 0 {
		return "sonnet"
	}
	return t.Models[0]
}

func keyNote(t Target) []string {
	if t.Key != "" {
		return []string{"the key is written into the client's configuration, which is kept private (mode 0600)"}
	}
	if t.KeyEnv == "" {
		return nil
	}
	return []string{"export " + t.KeyEnv + " with the Meridian's key where you run the client: the config names the variable, not the key"}
}

func path(p ...string) []string { return p }

// claudeCode: Claude Code reads env from settings.json. It has a single
// provider, so pointing it at Meridian makes Meridian its default. A key
// named by a variable comes from a helper command that prints it, so the
// file never holds it; the token an earlier setup wrote is emptied then,
// because Claude Code sends a set ANTHROPIC_AUTH_TOKEN before the
// helper's key and takes an empty one for unset (measured on the pinned
// CLI).
func claudeCode(t Target, l locator) ([]fileEdit, []string) {
	f := fileEdit{path: filepath.Join(l.dir("CLAUDE_CONFIG_DIR", ".claude"), "settings.json"), format: jsonc, secret: t.Key != ""}
	f.edits = append(f.edits, confedit.Edit{Path: path("env", "ANTHROPIC_BASE_URL"), Value: t.BaseURL})
	notes := []string{"Claude Code now sends every request to Meridian (it has one provider); `meridian claude` runs it against Meridian without this"}
	if t.Key == "" && t.KeyEnv != "" {
		f.edits = append(f.edits, confedit.Edit{Path: path("apiKeyHelper"), Value: "printenv " + t.KeyEnv},
			confedit.Edit{Path: path("env", "ANTHROPIC_AUTH_TOKEN"), Value: ""})
	} else {
		f.edits = append(f.edits, confedit.Edit{Path: path("env", "ANTHROPIC_AUTH_TOKEN"), Value: t.key("")})
	}
	if t.SetDefault {
		// Its own default model may be one this Meridian's backend lacks.
		f.edits = append(f.edits, confedit.Edit{Path: path("model"), Value: t.defaultModel()})
	}
	return []fileEdit{f}, append(notes, keyNote(t)...)
}

// openCode: a provider on Meridian's Messages API, its key by OpenCode's
// {env:NAME} reference.
func openCode(t Target, l locator) ([]fileEdit, []string) {
	file := l.env["OPENCODE_CONFIG"]
	if file == "" {
		dir := filepath.Join(l.xdgConfig(), "opencode")
		file = filepath.Join(dir, "opencode.json")
		for _, name := range []string{"opencode.jsonc", "opencode.json", "config.json"} {
			if l.exists(filepath.Join(dir, name)) {
				file = filepath.Join(dir, name)
				break
			}
		}
	}
	models := confedit.Obj{}
	for _, m := range t.Models {
		models = append(models, confedit.KV{Key: m, Value: confedit.Obj{{Key: "name", Value: m + " (Meridian)"}, {Key: "tool_call", Value: true}}})
	}
	provider := confedit.Obj{
		{Key: "npm", Value: "@ai-sdk/anthropic"},
		{Key: "name", Value: "Meridian"},
		{Key: "options", Value: confedit.Obj{{Key: "baseURL", Value: t.BaseURL + "/v1"}, {Key: "apiKey", Value: t.key("{env:VAR}")}}},
		{Key: "models", Value: models},
	}
	f := fileEdit{path: file, format: jsonc, secret: t.Key != "", edits: []confedit.Edit{{Path: path("provider", "meridian"), Value: provider}}}
	notes := []string{"OpenCode: pick a model under the Meridian provider, or run `opencode -m meridian/" + t.defaultModel() + "`"}
	if t.SetDefault {
		f.edits = append(f.edits, confedit.Edit{Path: path("model"), Value: "meridian/" + t.defaultModel()})
		notes = notes[:0]
	}
	// The plugin, where OpenCode loads plugins of the user's own.
	plugin := fileEdit{path: filepath.Join(l.xdgConfig(), "opencode", "plugin", "meridian.ts"), format: verbatim, content: openCodePlugin}
	// OpenCode hands a plugin's provider its fetch (the plugin's stream
	// recovery) only when the provider has a stored credential. The
	// config's apiKey comes first, so this one only has to exist: it
	// holds no key (the file's other entries are secrets: it stays 0600).
	auth := fileEdit{path: filepath.Join(l.dir("XDG_DATA_HOME", ".local", "share"), "opencode", "auth.json"), format: jsonc, secret: true,
		edits: []confedit.Edit{{Path: path("meridian"), Value: confedit.Obj{{Key: "type", Value: "api"}, {Key: "key", Value: storedAuth}}}}}
	return []fileEdit{f, plugin, auth}, append(notes, keyNote(t)...)
}

// codex: a model provider on the Responses API. Codex reads a profile
// from a file of its own, $CODEX_HOME/NAME.config.toml, and refuses
// --profile while config.toml still holds a [profiles.NAME] table (as
// earlier setups wrote), so the profile and its provider go in that file
// and the old table is removed. With SetDefault, the provider and model
// become config.toml's own.
func codex(t Target, l locator) ([]fileEdit, []string) {
	home := l.dir("CODEX_HOME", ".codex")
	provider := func(edits ...confedit.Edit) []confedit.Edit {
		p := func(k string, v any) confedit.Edit {
			return confedit.Edit{Path: path("model_providers", "meridian", k), Value: v}
		}
		edits = append(edits, p("name", "Meridian"), p("base_url", t.BaseURL+"/v1"), p("wire_api", "responses"))
		switch {
		case t.Key != "":
			edits = append(edits, p("experimental_bearer_token", t.Key))
		case t.KeyEnv != "":
			edits = append(edits, p("env_key", t.KeyEnv))
		}
		return edits
	}
	top := []confedit.Edit{
		{Path: path("model_provider"), Value: "meridian"},
		{Path: path("model"), Value: t.defaultModel()},
	}
	profile := fileEdit{path: filepath.Join(home, "meridian.config.toml"), format: tomlFile, secret: t.Key != "", edits: provider(top...)}
	config := fileEdit{path: filepath.Join(home, "config.toml"), format: tomlFile, secret: t.Key != "" && t.SetDefault,
		edits: []confedit.Edit{{Path: path("profiles", "meridian"), Drop: true}}}
	notes := []string{"Codex: run `codex --profile meridian`"}
	if t.SetDefault {
		config.edits = provider(append(config.edits, top...)...)
		notes = notes[:0]
	}
	return []fileEdit{profile, config}, append(notes, keyNote(t)...)
}

// pi: a provider in models.json on the Messages API; Pi reads an apiKey
// that names a variable from that variable.
func pi(t Target, l locator) ([]fileEdit, []string) {
	dir := l.dir("PI_CODING_AGENT_DIR", ".pi", "agent")
	var models []any
	for _, m := range t.Models {
		models = append(models, confedit.Obj{{Key: "id", Value: m}, {Key: "name", Value: m + " (Meridian)"}})
	}
	provider := confedit.Obj{
		{Key: "baseUrl", Value: t.BaseURL},
		{Key: "api", Value: "anthropic-messages"},
		{Key: "apiKey", Value: t.key("VAR")},
		{Key: "models", Value: models},
	}
	files := []fileEdit{
		{path: filepath.Join(dir, "models.json"), format: jsonc, secret: t.Key != "", edits: []confedit.Edit{{Path: path("providers", "meridian"), Value: provider}}},
		{path: filepath.Join(dir, "extensions", "meridian.ts"), format: verbatim, content: piExtension},
		{path: filepath.Join(dir, "extensions", "meridian-spawn-watch.ts"), format: verbatim, content: piSpawnWatch},
	}
	notes := []string{"Pi: run `pi --model meridian/" + t.defaultModel() + "`"}
	if t.SetDefault {
		files = append(files, fileEdit{path: filepath.Join(dir, "settings.json"), format: jsonc, edits: []confedit.Edit{
			{Path: path("defaultProvider"), Value: "meridian"},
			{Path: path("defaultModel"), Value: t.defaultModel()},
		}})
		notes = notes[:0]
	}
	return files, append(notes, keyNote(t)...)
}

// crush: an Anthropic-type provider; Crush expands $NAME in api_key.
func crush(t Target, l locator) ([]fileEdit, []string) {
	file := filepath.Join(l.xdgConfig(), "crush", "crush.json")
	var models []any
	for _, m := range t.Models {
		models = append(models, confedit.Obj{{Key: "id", Value: m}, {Key: "name", Value: m + " (Meridian)"},
			{Key: "context_window", Value: 200000}, {Key: "default_max_tokens", Value: 32000}})
	}
	provider := confedit.Obj{
		{Key: "name", Value: "Meridian"},
		{Key: "type", Value: "anthropic"},
		{Key: "base_url", Value: t.BaseURL},
		{Key: "api_key", Value: t.key("$VAR")},
		{Key: "models", Value: models},
	}
	f := fileEdit{path: file, format: jsonc, secret: t.Key != "", edits: []confedit.Edit{{Path: path("providers", "meridian"), Value: provider}}}
	notes := []string{"Crush: choose a Meridian model in its model picker"}
	if t.SetDefault {
		for _, size := range []string{"large", "small"} {
			f.edits = append(f.edits, confedit.Edit{Path: path("models", size), Value: confedit.Obj{{Key: "model", Value: t.defaultModel()}, {Key: "provider", Value: "meridian"}}})
		}
		notes = notes[:0]
	}
	return []fileEdit{f}, append(notes, keyNote(t)...)
}

// droid: one custom model per Meridian model in settings.json; Droid
// expands ${NAME} in apiKey there.
func droid(t Target, l locator) ([]fileEdit, []string) {
	f := fileEdit{path: filepath.Join(l.home, ".factory", "settings.json"), format: jsonc, secret: t.Key != ""}
	for _, m := range t.Models {
		f.edits = append(f.edits, confedit.Edit{Path: path("customModels"), Match: "displayName", Value: confedit.Obj{
			{Key: "model", Value: m},
			{Key: "displayName", Value: m + " (Meridian)"},
			{Key: "baseUrl", Value: t.BaseURL},
			{Key: "apiKey", Value: t.key("${VAR}")},
			{Key: "provider", Value: "anthropic"},
			{Key: "maxOutputTokens", Value: 32000},
		}})
	}
	notes := []string{"Droid: choose a \"(Meridian)\" model with /model; Droid keeps its own default"}
	return []fileEdit{f}, append(notes, keyNote(t)...)
}

// Exports are shell lines that point any client reading the usual
// variables at Meridian.
func Exports(t Target) []string {
	key := t.key(`"$VAR"`)
	return []string{
		"export ANTHROPIC_BASE_URL=" + t.BaseURL,
		"export ANTHROPIC_API_KEY=" + key,
		"export OPENAI_BASE_URL=" + t.BaseURL + "/v1",
		"export OPENAI_API_KEY=" + key,
	}
}
