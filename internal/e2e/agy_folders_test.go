package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/backend/workdir"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// meridian killed -9 with three agy sessions open leaves their folders;
// the next start removes them, once agy is gone too. A folder a live
// process still holds stays, and another data folder's are untouched.
func TestKilledGatewaysAgyFoldersAreSwept(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{})
	g.start()
	ctx := context.Background()
	for i := range 3 {
		if _, err := g.client(fmt.Sprintf("folders-%d", i)).Messages.New(ctx, agyParams("hello")); err != nil {
			t.Fatalf("session %d: %v\n%s", i, err, g.log.String())
		}
	}
	root := filepath.Join(g.dataDir, "agy-sessions")
	folders, _ := filepath.Glob(filepath.Join(root, "session-*"))
	if len(folders) != 3 {
		t.Fatalf("%d session folders for three live sessions: %v", len(folders), folders)
	}
	// A folder held by a process that outlives meridian, and a stale one
	// in another data folder.
	held, err := workdir.Make(root, "session-")
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "60")
	holder.ExtraFiles = []*os.File{held.Lock()}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	_ = held.Lock().Close()
	other, err := workdir.Make(filepath.Join(t.TempDir(), "agy-sessions"), "session-")
	if err != nil {
		t.Fatal(err)
	}
	_ = other.Lock().Close()

	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = g.cmd.Wait()
	if err := testkit.WaitFor(10*time.Second, func() error {
		if n := len(g.agys()); n > 0 {
			return fmt.Errorf("%d agy processes still alive", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range folders {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the killed meridian's folder %s is already gone: %v", f, err)
		}
	}
	g.start()
	for _, f := range folders {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the killed meridian's folder %s is still there after the restart: %v", f, err)
		}
	}
	for _, f := range []string{held.Path, other.Path} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s was removed: %v", f, err)
		}
	}
}
