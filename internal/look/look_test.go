package look

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/testkit"
)

var meridianBin string

func TestMain(m *testing.M) { os.Exit(testkit.RunWithMeridian(m, &meridianBin)) }

// A look at a real gateway (one whose CLI is missing, so it is
// unavailable) reads its health and its default profile with the admin
// key; a wrong key is an error that says which key is needed; nothing
// listening is a reading that did not reach it.
func TestLook(t *testing.T) {
	cmd, addr, _ := testkit.ServeMeridian(t, meridianBin, "--admin-key", "desk-SECRET", "--claude-path", "/nonexistent/claude")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ctx := context.Background()

	r, alerts, err := (&Looker{URL: "http://" + addr, Key: "desk-SECRET"}).Look(ctx)
	if err != nil || !r.Reached || r.Health != "unavailable" || len(r.Profiles) != 1 || r.Profiles[0].Name != "default" || len(alerts) != 0 {
		t.Fatalf("reading %+v alerts %v err %v", r, alerts, err)
	}
	if _, _, err := (&Looker{URL: "http://" + addr, Key: "wrong"}).Look(ctx); err == nil || !strings.Contains(err.Error(), "admin key") {
		t.Fatalf("a wrong key: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	if r, _, err := (&Looker{URL: "http://" + gone}).Look(ctx); err != nil || r.Reached {
		t.Fatalf("nothing listening: %+v %v", r, err)
	}
}
