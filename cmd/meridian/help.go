package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Command groups of the root's help, in the order a new user needs them.
const (
	groupGateway = "gateway"
	groupClients = "clients"
	groupAgents  = "agents"
)

// boolMarker is what pflag 1.1 appends to every boolean flag in its
// usage; a boolean is set by naming it, so the help shows --flag alone.
const boolMarker = "[=true|false]"

// usage prints a command's usage in cobra's own layout, with command
// groups, and boolean flags shown as --flag.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.Runnable() {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", strings.Join(append([]string{c.Name()}, c.Aliases...), ", "))
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", strings.TrimRight(c.Example, "\n"))
	}
	if c.HasAvailableSubCommands() {
		listed := map[string]bool{}
		for _, g := range c.Groups() {
			commandList(&b, "\n"+g.Title+"\n", c.Commands(), func(sub *cobra.Command) bool { return sub.GroupID == g.ID }, listed)
		}
		title := "\nCommands:\n"
		if len(c.Groups()) > 0 {
			title = "\nMore commands:\n"
		}
		commandList(&b, title, c.Commands(), func(sub *cobra.Command) bool { return !listed[sub.Name()] }, listed)
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", flagUsages(c.LocalFlags()))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\nGlobal flags:\n%s", flagUsages(c.InheritedFlags()))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nRun \"%s COMMAND --help\" for what a command does and its flags.\n", c.CommandPath())
	}
	_, err := io.WriteString(c.OutOrStderr(), b.String())
	return err
}

// commandList writes the available commands that keep holds, under title.
func commandList(b *strings.Builder, title string, cmds []*cobra.Command, keep func(*cobra.Command) bool, listed map[string]bool) {
	var lines []string
	for _, sub := range cmds {
		if !sub.IsAvailableCommand() && sub.Name() != "help" || !keep(sub) {
			continue
		}
		listed[sub.Name()] = true
		lines = append(lines, fmt.Sprintf("  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short))
	}
	if len(lines) > 0 {
		b.WriteString(title)
		b.WriteString(strings.Join(lines, ""))
	}
}

// flagUsages is pflag's layout with the boolean marker blanked: the
// columns stay aligned, and a boolean reads as --flag.
func flagUsages(fs *pflag.FlagSet) string {
	return strings.ReplaceAll(fs.FlagUsagesWrapped(120), boolMarker, strings.Repeat(" ", len(boolMarker)))
}

// hideFlags keeps every flag of fs working but out of the help.
func hideFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) { f.Hidden = true })
}
