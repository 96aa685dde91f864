package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/updatecheck"
)

// newVersionCommand is `meridian version`: the version, how the binary
// was built (--verbose), and a newer release when there is one.
func newVersionCommand(env map[string]string) *cobra.Command {
	var verbose, noCheck bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version (and whether a newer release is out)",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "meridian", version())
			if verbose {
				fmt.Fprint(cmd.OutOrStdout(), provenance())
			}
			f, ok := cmd.OutOrStdout().(*os.File)
			if !updatecheck.Enabled(func(k string) string { return env[k] }, noCheck, ok && profile.IsTerminal(f)) {
				return
			}
			c := &updatecheck.Checker{URL: env[updatecheck.EnvURL], Cache: updatecheck.CacheFile(func(k string) string { return env[k] })}
			latest, err := c.Latest(context.Background())
			if err == nil && updatecheck.Newer(releaseVersion, latest) {
				fmt.Fprintf(cmd.ErrOrStderr(), "a newer release is out: %s (this is %s); update as you installed it: your package manager, `go install github.com/meridian-gw/meridian/cmd/meridian@latest`, or the release page\n", latest, releaseVersion)
			}
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also say how this binary was built: commit, its date, Go, target, build flags")
	cmd.Flags().BoolVar(&noCheck, "no-update-check", false, "do not ask which release is newest ("+updatecheck.EnvCheck+"=off does the same; never asked in CI)")
	return cmd
}

// provenance says how the binary was built, from what Go recorded in it.
func provenance() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "build    not recorded\n"
	}
	s := map[string]string{}
	for _, kv := range info.Settings {
		s[kv.Key] = kv.Value
	}
	commit := s["vcs.revision"]
	if commit == "" {
		commit = releaseCommit
	}
	switch {
	case commit == "":
		commit = "not recorded"
	case s["vcs.modified"] == "true":
		commit += " (with uncommitted changes)"
	}
	built := s["vcs.time"]
	if built == "" {
		built = "not recorded"
	}
	how := "go build"
	if releaseVersion != "" {
		how = "a release build (goreleaser)"
	}
	var flags []string
	for _, k := range []string{"-trimpath", "-tags", "-ldflags", "CGO_ENABLED", "GOAMD64", "GOARM64"} {
		if v, ok := s[k]; ok {
			flags = append(flags, k+"="+v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "commit   %s\n", commit)
	fmt.Fprintf(&b, "date     %s (the commit's)\n", built)
	fmt.Fprintf(&b, "built    by %s with %s for %s/%s\n", how, info.GoVersion, s["GOOS"], s["GOARCH"])
	fmt.Fprintf(&b, "flags    %s\n", strings.Join(flags, " "))
	fmt.Fprintf(&b, "module   %s\n", info.Main.Path)
	return b.String()
}
