// Package service runs Meridian at login under the user's own service
// manager: a systemd user unit on Linux, a launchd agent on macOS.
package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Unit is what the service runs.
type Unit struct {
	Binary string            // absolute path of the meridian binary
	Env    map[string]string // the settings file, PATH (so the CLI is found as in the user's shell)
	// Secrets are variables kept out of the unit file: systemd reads them
	// from EnvFile (0600); the launchd agent, itself 0600, holds them.
	Secrets map[string]string
	EnvFile string
	// Drain is how long meridian may take to finish running requests
	// after SIGTERM; the manager waits longer than that before it kills.
	Drain   time.Duration
	LogFile string // launchd only: where stdout and stderr go
}

// Name is the systemd unit's name; Label the launchd agent's.
const (
	Name  = "meridian.service"
	Label = "com.github.meridian-gw.meridian"
)

// stopGrace is how long past the drain the manager waits before SIGKILL.
const stopGrace = 15 * time.Second

// Systemd is the user unit. SIGTERM goes to meridian alone (KillMode
// mixed) so it drains and closes its own claude processes; whatever is
// left after the drain and a grace gets SIGKILL.
func (u Unit) Systemd() string {
	var b strings.Builder
	b.WriteString("[Unit]\nDescription=Meridian, a local gateway from coding agents to the claude CLI\n\n")
	b.WriteString("[Service]\nType=exec\n")
	fmt.Fprintf(&b, "ExecStart=%s serve\n", systemdQuote(u.Binary))
	for _, k := range sortedKeys(u.Env) {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(k+"="+u.Env[k]))
	}
	if len(u.Secrets) > 0 {
		fmt.Fprintf(&b, "EnvironmentFile=%s\n", systemdQuote(u.EnvFile))
	}
	fmt.Fprintf(&b, "Restart=on-failure\nRestartSec=2s\nKillMode=mixed\nKillSignal=SIGTERM\nTimeoutStopSec=%ds\n\n", int((u.Drain + stopGrace).Seconds()))
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.String()
}

// systemdQuote quotes a value for a unit file when it needs it: spaces,
// quotes, backslashes, and % (a specifier) are escaped.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Launchd is the agent's property list: started at login, started again
// when it exits other than cleanly, given the drain before it is killed.
func (u Unit) Launchd() string {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString(`<plist version="1.0">` + "\n<dict>\n")
	key := func(k string) { fmt.Fprintf(&b, "  <key>%s</key>\n", esc(k)) }
	str := func(indent, v string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, esc(v)) }
	key("Label")
	str("  ", Label)
	key("ProgramArguments")
	b.WriteString("  <array>\n")
	str("    ", u.Binary)
	str("    ", "serve")
	b.WriteString("  </array>\n")
	key("EnvironmentVariables")
	b.WriteString("  <dict>\n")
	all := map[string]string{}
	for k, v := range u.Env {
		all[k] = v
	}
	for k, v := range u.Secrets {
		all[k] = v
	}
	for _, k := range sortedKeys(all) {
		fmt.Fprintf(&b, "    <key>%s</key>\n", esc(k))
		str("    ", all[k])
	}
	b.WriteString("  </dict>\n")
	key("RunAtLoad")
	b.WriteString("  <true/>\n")
	key("KeepAlive")
	b.WriteString("  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n")
	key("ExitTimeOut")
	fmt.Fprintf(&b, "  <integer>%d</integer>\n", int((u.Drain + stopGrace).Seconds()))
	key("StandardOutPath")
	str("  ", u.LogFile)
	key("StandardErrorPath")
	str("  ", u.LogFile)
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// EnvFileText is the systemd environment file holding the secrets.
func (u Unit) EnvFileText() string {
	var b strings.Builder
	for _, k := range sortedKeys(u.Secrets) {
		// An environment file expands no specifiers: only quotes matter.
		fmt.Fprintf(&b, "%s=\"%s\"\n", k, strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(u.Secrets[k]))
	}
	return b.String()
}

// ForBinary is the unit that runs bin with the caller's settings: the
// settings file, PATH, and every other MERIDIAN_* variable set now, the
// API key kept apart in envFile. The manager waits out the drain the
// settings ask for (MERIDIAN_DRAIN_TIMEOUT), else defaultDrain. A binary
// built by `go run` is refused: it is gone once that command ends.
func ForBinary(bin, configPath, envFile, logFile string, env map[string]string, defaultDrain time.Duration) (Unit, error) {
	if strings.Contains(bin, string(filepath.Separator)+"go-build") {
		return Unit{}, errors.New("this binary is a temporary one from `go run`: install meridian (go install, a package) and run its `service install`")
	}
	u := Unit{Binary: bin, Drain: defaultDrain, LogFile: logFile,
		Env: map[string]string{"MERIDIAN_CONFIG": configPath, "PATH": env["PATH"]}}
	if d, err := time.ParseDuration(env["MERIDIAN_DRAIN_TIMEOUT"]); err == nil && d > 0 {
		u.Drain = d
	}
	for k, v := range env {
		switch {
		case k == "MERIDIAN_ADMIN_KEY" || k == "MERIDIAN_CLUSTER_KEY":
			if u.Secrets == nil {
				u.Secrets = map[string]string{}
			}
			u.Secrets[k], u.EnvFile = v, envFile
		case k == "MERIDIAN_API_KEY":
			// A client's key: the service has no use for it.
		case strings.HasPrefix(k, "MERIDIAN_") && k != "MERIDIAN_CONFIG":
			u.Env[k] = v
		}
	}
	return u, nil
}
