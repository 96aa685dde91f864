// Package launch prepares a lead's own claude session for meridian
// claude: it decides from the CLI's arguments what kind of launch it is,
// installs the mods the session loads, records the session as a primary
// spawn and execs the CLI.
package launch

import "strings"

// Mode is what a claude command line starts.
type Mode int

const (
	// Interactive is a REPL with a person at the terminal.
	Interactive Mode = iota
	// Print is a one-shot run (-p, or output that is not a terminal).
	Print
	// Other is a subcommand, --help or --version: no session at all.
	Other
)

func (m Mode) String() string {
	switch m {
	case Interactive:
		return "interactive"
	case Print:
		return "print"
	}
	return "other"
}

// subcommands are the CLI's commands (2.1.332, aliases included): each
// runs instead of a session.
var subcommands = map[string]bool{
	"agents": true, "attach": true, "auth": true, "auto-mode": true, "doctor": true, "gateway": true,
	"import": true, "install": true, "logs": true, "mcp": true, "plugin": true, "plugins": true,
	"purge": true, "respawn": true, "rm": true, "setup-token": true, "stop": true, "kill": true,
	"ultrareview": true, "update": true, "upgrade": true,
}

// Classify says what the claude arguments start. The CLI itself runs
// non-interactively when its output is not a terminal, whatever the flags.
func Classify(args []string, stdoutTerminal bool) Mode {
	if len(args) > 0 && subcommands[args[0]] {
		return Other
	}
	mode := Interactive
	if !stdoutTerminal {
		mode = Print
	}
	for _, a := range args {
		switch {
		case a == "--":
			return mode
		case a == "-h" || a == "--help" || a == "-v" || a == "--version":
			return Other
		case a == "-p" || a == "--print" || strings.HasPrefix(a, "--print="):
			mode = Print
		}
	}
	return mode
}

// Args is the claude command line for a launch: the mod folders go first
// as --plugin-dir, for interactive launches only.
func Args(args []string, mode Mode, pluginDirs ...string) []string {
	if mode != Interactive {
		return args
	}
	out := make([]string, 0, len(args)+2*len(pluginDirs))
	for _, d := range pluginDirs {
		out = append(out, "--plugin-dir", d)
	}
	return append(out, args...)
}
