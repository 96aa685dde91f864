// Package mods holds the Claude Code mods meridian installs, embedded in
// the binary: only the files a session loads, not their tests.
package mods

import (
	"embed"
	"io/fs"
)

//go:embed meridian-spawn-watch/.claude-plugin/plugin.json
//go:embed meridian-spawn-watch/hooks/hooks.json meridian-spawn-watch/hooks/register.ts
//go:embed meridian-spawn-watch/tsconfig.json meridian-spawn-watch/README.md
var files embed.FS

// SpawnWatch is the meridian-spawn-watch mod, rooted at its folder.
func SpawnWatch() fs.FS {
	sub, err := fs.Sub(files, "meridian-spawn-watch")
	if err != nil {
		panic(err) // the path is a constant embedded above
	}
	return sub
}
