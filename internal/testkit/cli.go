package testkit

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The pinned claude CLI lives in the repository's ignored tools folder,
// installed by scripts/install-claude at the version in scripts/claude-version.
const (
	versionFile = "scripts/claude-version"
	toolsDir    = ".tools/claude"
	binInPkg    = "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
)

// RepoRoot returns the module root, found from the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// ClaudeVersion returns the pinned CLI version.
func ClaudeVersion(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), versionFile))
	if err != nil {
		t.Fatalf("read pinned claude version: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// ClaudePath returns the pinned real CLI. MERIDIAN_TEST_CLAUDE overrides the
// location. When the binary is missing the test is skipped, except under CI
// (CI set), where a missing CLI fails the run: the real-CLI tests must not
// silently vanish.
func ClaudePath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("MERIDIAN_TEST_CLAUDE")
	if path == "" {
		path = filepath.Join(RepoRoot(t), toolsDir, ClaudeVersion(t), binInPkg)
	}
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		Missing(t, fmt.Sprintf("real claude CLI not found at %s; run scripts/install-claude", path), "real-CLI tests")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the pinned CLI is linux-x64; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return path
}

// ClaudeEnv returns an isolated environment for a CLI talking to the fake
// upstream at baseURL: a temporary HOME and config dir, a dummy API key,
// no retries, and a marker variable that Processes finds the CLI's
// processes by.
func ClaudeEnv(t testing.TB, baseURL string) (env []string, marker string) {
	t.Helper()
	home := t.TempDir()
	marker = rand.Text()
	env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"TMPDIR=" + home,
		"MERIDIAN_TEST_MARKER=" + marker,
	}
	return env, marker
}

// Processes lists the pids of live processes whose environment carries the
// marker from ClaudeEnv. Zombies count as gone.
func Processes(marker string) []int {
	want := []byte("MERIDIAN_TEST_MARKER=" + marker + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if f := StatFields(pid); len(f) > 0 && f[0] == "Z" {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// WaitNoProcesses fails the test unless every process carrying the marker
// is gone within d.
func WaitNoProcesses(t testing.TB, marker string, d time.Duration) {
	t.Helper()
	if err := WaitFor(d, func() error {
		if pids := Processes(marker); len(pids) > 0 {
			return fmt.Errorf("processes still alive: %v", pids)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TranscriptUserTexts returns the text of every user message the CLI
// recorded in a session's transcript, in order: what was written to it,
// turn by turn.
func TranscriptUserTexts(t testing.TB, env []string, sessionID string) []string {
	t.Helper()
	var configDir string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			configDir = v
		}
	}
	files, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", sessionID+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("transcript of session %s: found %d files", sessionID, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		var entry struct {
			Type    string `json:"type"`
			Message struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &entry) != nil || entry.Type != "user" || entry.Message.Role != "user" {
			continue
		}
		var content any
		_ = json.Unmarshal(entry.Message.Content, &content)
		out = append(out, textOf(content))
	}
	return out
}

// RSSKB returns a process's resident memory in kB, or 0 if it is gone.
func RSSKB(pid int) int {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}

// CPUTicks returns the CPU time a process has used, in clock ticks (user
// and system), or 0 if it is gone.
func CPUTicks(pid int) int { return cpuTicks(pid, false) }

// CPUTicksReaped is CPUTicks plus what the process's children that have
// exited and been waited for used: a process tree's CPU, counted at its
// root, keeps what its exited members spent.
func CPUTicksReaped(pid int) int { return cpuTicks(pid, true) }

func cpuTicks(pid int, reaped bool) int {
	f := StatFields(pid)
	if len(f) < 15 {
		return 0
	}
	fields := f[11:13]
	if reaped {
		fields = f[11:15]
	}
	sum := 0
	for _, v := range fields {
		n, _ := strconv.Atoi(v)
		sum += n
	}
	return sum
}

// StatFields are the fields of /proc/pid/stat after the command name,
// which is in parentheses and may hold spaces: [0] is the state (field 3
// in proc(5)), [16] the nice value. Nil if the process is gone.
func StatFields(pid int) []string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}
