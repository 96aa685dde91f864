package lead

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/spawn"
)

func TestFromEnv(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	l, err := FromEnv(map[string]string{}, dir, "", data)
	if err != nil {
		t.Fatal(err)
	}
	if l.Project != dir || l.ID != "" || l.Depth != 0 || l.MaxDepth != DefaultMaxDepth || l.ReadOnly ||
		l.ReapWindow != spawn.DefaultReapWindow || l.SpawnsDir != filepath.Join(data, "spawns") {
		t.Fatalf("defaults: %+v", l)
	}

	env := map[string]string{spawn.EnvProject: "/elsewhere", spawn.EnvDepth: "2", spawn.EnvMaxDepth: "3",
		spawn.EnvReapWindow: "5s", spawn.EnvReapGrace: "7s"}
	if l, err = FromEnv(env, dir, "", data); err != nil {
		t.Fatal(err)
	}
	if l.Project != "/elsewhere" || l.Depth != 2 || l.MaxDepth != 3 || l.ReapWindow != 5*time.Second || l.ReapGrace != 7*time.Second {
		t.Fatalf("from the environment: %+v", l)
	}

	// --chdir names another project and only looks.
	other := t.TempDir()
	if l, err = FromEnv(env, dir, other, data); err != nil {
		t.Fatal(err)
	}
	if l.Project != other || l.Cwd != other || !l.ReadOnly {
		t.Fatalf("chdir: %+v", l)
	}

	for key, bad := range map[string]string{spawn.EnvID: "nope", spawn.EnvDepth: "-1", spawn.EnvMaxDepth: "x",
		spawn.EnvReapWindow: "0s", spawn.EnvReapGrace: "soon", spawn.EnvRetention: "-1h"} {
		_, err := FromEnv(map[string]string{key: bad}, dir, "", data)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%q: %v", key, bad, err)
		}
	}
}
