package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// hookFile is a hooks.json: hook names to their handlers by event.
type hookFile map[string]struct {
	Enabled       *bool          `json:"enabled"`
	PreToolUse    []toolMatchers `json:"PreToolUse"`
	PreInvocation []handler      `json:"PreInvocation"`
}

type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

type toolMatchers struct {
	Matcher string    `json:"matcher"`
	Hooks   []handler `json:"hooks"`
}

// hookFiles are the hooks.json files agy reads, in order: the global one
// under $HOME, then each --add-dir folder's.
func (s *session) hookFiles() []hookFileAt {
	files := []string{filepath.Join(os.Getenv("HOME"), ".gemini", "config", "hooks.json")}
	for _, d := range s.o.addDirs {
		files = append(files, filepath.Join(d, ".agents", "hooks.json"))
	}
	var out []hookFileAt
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var hf hookFile
		if json.Unmarshal(b, &hf) != nil {
			continue // a file that does not parse is dropped whole
		}
		out = append(out, hookFileAt{file, hf})
	}
	return out
}

type hookFileAt struct {
	path string
	hf   hookFile
}

// preInvocation runs the PreInvocation hooks before a model call, as agy
// does, and returns the user messages they inject.
func (s *session) preInvocation(n int) []string {
	payload, _ := json.Marshal(map[string]any{"conversationId": s.conv.ID, "invocationNum": n, "initialNumSteps": s.conv.NextStep,
		"modelName": "gemini-3-flash-agent", "workspacePaths": s.o.addDirs})
	var injected []string
	for _, f := range s.hookFiles() {
		for _, name := range sortedNames(f.hf) {
			h := f.hf[name]
			if h.Enabled != nil && !*h.Enabled {
				continue
			}
			for _, handler := range h.PreInvocation {
				out, err := s.runCommand(filepath.Dir(f.path), handler.Command, handler.Timeout, payload)
				s.log.write(map[string]any{"hook": name, "event": "PreInvocation", "stdout": string(out), "err": fmt.Sprint(err)})
				var answer struct {
					InjectSteps []struct {
						UserMessage string `json:"userMessage"`
					} `json:"injectSteps"`
				}
				if err == nil && json.Unmarshal(out, &answer) == nil {
					for _, st := range answer.InjectSteps {
						if st.UserMessage != "" {
							injected = append(injected, st.UserMessage)
						}
					}
				}
			}
		}
	}
	return injected
}

func sortedNames(hf hookFile) []string {
	names := make([]string, 0, len(hf))
	for name := range hf {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// preToolUse runs the PreToolUse hooks that match tool, as agy does: from
// each --add-dir folder's .agents/hooks.json and the global one under
// $HOME, in the hooks.json's folder, the payload on stdin. It returns the
// tool step's error when a hook blocks the call, "" when none does.
func (s *session) preToolUse(idx int, tool string, args json.RawMessage) string {
	payload, _ := json.Marshal(map[string]any{
		"artifactDirectoryPath": filepath.Join("~/.gemini/antigravity-cli/brain", s.conv.ID),
		"conversationId":        s.conv.ID,
		"modelName":             "gemini-3-flash-agent",
		"stepIdx":               idx,
		"toolCall":              map[string]any{"args": args, "name": tool},
		"transcriptPath":        filepath.Join("~/.gemini/antigravity-cli/brain", s.conv.ID, ".system_generated/logs/transcript_full.jsonl"),
		"workspacePaths":        s.o.addDirs,
	})
	for _, f := range s.hookFiles() {
		for _, name := range sortedNames(f.hf) {
			h := f.hf[name]
			if h.Enabled != nil && !*h.Enabled {
				continue
			}
			for _, m := range h.PreToolUse {
				if !matches(m.Matcher, tool) {
					continue
				}
				for i, handler := range m.Hooks {
					if verdict := s.runHook(filepath.Dir(f.path), name, i, handler.Command, handler.Timeout, payload); verdict != "" {
						return verdict
					}
				}
			}
		}
	}
	return ""
}

func matches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	return err == nil && re.MatchString(tool)
}

// runCommand runs a hook's command as agy does: sh -c in the hooks.json's
// folder, the payload on stdin, within its timeout. A failure's error
// carries the command's stderr.
func (s *session) runCommand(dir, command string, timeout int, payload []byte) ([]byte, error) {
	if timeout <= 0 {
		timeout = 30
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(timeout)*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANTIGRAVITY_CONVERSATION_ID="+s.conv.ID)
	cmd.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%w, stderr: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// runHook runs one PreToolUse handler and reads its decision.
func (s *session) runHook(dir, name string, i int, command string, timeout int, payload []byte) string {
	stdout, err := s.runCommand(dir, command, timeout, payload)
	s.log.write(map[string]any{"hook": name, "event": "PreToolUse", "stdout": string(stdout), "err": fmt.Sprint(err)})
	if err != nil {
		return fmt.Sprintf("JSON hook %q failed: command failed: %v", fmt.Sprintf("jsonhook__%s_PreToolUse_0_%d", name, i), err)
	}
	var d struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	_ = json.Unmarshal(stdout, &d)
	switch d.Decision {
	case "allow", "ask", "force_ask":
		return ""
	case "deny_unless_prior_grant":
		if s.o.skipPermissions {
			return ""
		}
	}
	// deny, and anything else: an empty or missing decision fails closed.
	msg := "tool call denied by pre-tool hook"
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}
