package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGenDocsCommand writes what packages install beside the binary: a
// man page per command and the shell completions, all generated from the
// commands themselves so they cannot drift from them.
func newGenDocsCommand(root func() *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write man pages (DIR/man) and shell completions (DIR/completions) for packages",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			man := filepath.Join(args[0], "man")
			completions := filepath.Join(args[0], "completions")
			for _, d := range []string{man, completions} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			r := root()
			r.DisableAutoGenTag = true // the same pages from the same commands, byte for byte
			header := &doc.GenManHeader{Title: "MERIDIAN", Section: "1", Source: "meridian " + version(), Manual: "Meridian"}
			if err := doc.GenManTree(r, header, man); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			for name, gen := range map[string]func(string) error{
				"meridian.bash": func(p string) error { return r.GenBashCompletionFileV2(p, true) },
				"_meridian":     r.GenZshCompletionFile,
				"meridian.fish": func(p string) error { return r.GenFishCompletionFile(p, true) },
			} {
				if err := gen(filepath.Join(completions, name)); err != nil {
					return fmt.Errorf("completion %s: %w", name, err)
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "wrote", man, "and", completions)
			return nil
		},
	}
}
