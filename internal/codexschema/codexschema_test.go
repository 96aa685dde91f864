package codexschema

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// The record is what the pinned codex writes today, byte for byte: a
// codex bumped without recording its protocol again fails here.
func TestTheRecordIsTheBinarysOwn(t *testing.T) {
	bin := testkit.CodexPath(t)
	out := t.TempDir()
	home := t.TempDir()
	cmd := exec.Command(bin, "app-server", "generate-json-schema", "--out", out)
	cmd.Env = []string{"HOME=" + home, "CODEX_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate-json-schema: %v\n%s", err, b)
	}
	if v, err := exec.Command(bin, "--version").Output(); err != nil || !strings.Contains(string(v), Version) {
		t.Fatalf("the binary is %q (%v), the record is of codex %s", v, err, Version)
	}
	got, err := os.ReadFile(filepath.Join(out, BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bundle) {
		t.Fatalf("codex %s's protocol differs from the record: write %s into internal/codexschema again", Version, BundleFile)
	}
}

// The methods Meridian's codex backend needs are there, in the numbers
// the measured reference counts.
func TestMethods(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range map[Kind]int{ClientRequest: 110, ServerNotification: 87, ServerRequest: 10} {
		if got := len(p.Methods(k)); got != n {
			t.Errorf("%s: %d methods, the reference counts %d", k, got, n)
		}
	}
	for k, methods := range map[Kind][]string{
		ClientRequest:      {"initialize", "thread/start", "thread/resume", "thread/fork", "turn/start", "turn/interrupt", "turn/steer", "model/list"},
		ClientNotification: {"initialized"},
		ServerNotification: {"turn/started", "item/started", "item/completed", "item/agentMessage/delta", "thread/tokenUsage/updated", "account/rateLimits/updated", "turn/completed"},
		ServerRequest:      {"item/commandExecution/requestApproval", "item/fileChange/requestApproval", "item/tool/call"},
	} {
		for _, m := range methods {
			if !p.Has(k, m) {
				t.Errorf("%s has no %s", k, m)
			}
		}
	}
}

// Messages are checked against the record: what the protocol says
// passes, a made-up method, a missing field, a wrong type or JSON-RPC's
// own member does not.
func TestCheck(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind Kind
		line string
		ok   bool
	}{
		{ClientRequest, `{"id":1,"method":"initialize","params":{"clientInfo":{"name":"meridian","version":"1.0"}}}`, true},
		{ClientNotification, `{"method":"initialized"}`, true},
		{ClientRequest, `{"id":2,"method":"turn/start","params":{"threadId":"t-1","input":[{"type":"text","text":"hello","text_elements":[]}]}}`, true},
		{ClientRequest, `{"id":3,"method":"turn/interrupt","params":{"threadId":"t-1","turnId":"u-1"}}`, true},
		{ServerNotification, `{"method":"item/agentMessage/delta","params":{"threadId":"t-1","turnId":"u-1","itemId":"i-1","delta":"he"},"emittedAtMs":1}`, true},
		{ClientRequest, `{"id":4,"method":"turn/launch","params":{}}`, false},
		{ClientRequest, `{"id":5,"method":"turn/start","params":{"input":[]}}`, false},
		{ClientRequest, `{"id":6,"method":"turn/interrupt","params":{"threadId":7,"turnId":"u-1"}}`, false},
		{ClientRequest, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"meridian","version":"1.0"}}}`, false},
		{ServerNotification, `not json`, false},
	} {
		err := p.Check(c.kind, []byte(c.line))
		if (err == nil) != c.ok {
			t.Errorf("%s %s: %v", c.kind, c.line, err)
		}
	}
}
