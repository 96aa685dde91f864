package weblogin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// fakeLogin is a CLI login as the pinned claude prints it: a hyperlinked
// URL, then a prompt for the code; it logs in (writes the file) when the
// code is right.
func fakeLogin(t *testing.T) (cmd func() *exec.Cmd, loggedIn string) {
	dir := t.TempDir()
	loggedIn = filepath.Join(dir, "logged-in")
	script := filepath.Join(dir, "login")
	body := `#!/bin/sh
printf 'Opening browser to sign in\r\nIf the browser did not open, visit:\r\n'
printf '\033]8;;https://claude.example/oauth/authorize?code=true&state=abc\007\033[94mhttps://claude.example/oauth/authorize?code=true&state=abc\033[39m\033]8;;\007\r\n'
printf 'Paste code here if prompted > '
read code
if [ "$code" = "good-code#state" ]; then touch ` + loggedIn + `; echo 'Login successful'; exit 0; fi
echo 'Invalid code'; exit 1
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() *exec.Cmd { return exec.Command(script) }, loggedIn
}

func checkFile(path string) Check {
	return func(context.Context) (bool, string) {
		_, err := os.Stat(path)
		return err == nil, "no login file"
	}
}

func wait(t *testing.T, r *Relay, id string, want func(View) bool) View {
	t.Helper()
	var v View
	if err := testkit.WaitFor(10*time.Second, func() error {
		v, _ = r.Get(id)
		if !want(v) {
			return fmt.Errorf("login state %s %s", v.State, v.Error)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestALoginIsRelayedAndChecked(t *testing.T) {
	cmd, file := fakeLogin(t)
	r := New(time.Minute)
	defer r.Close()
	v, err := r.Start("pro", cmd(), checkFile(file))
	if err != nil {
		t.Fatal(err)
	}
	v = wait(t, r, v.ID, func(v View) bool { return v.State == Waiting && v.AsksCode })
	if v.URL != "https://claude.example/oauth/authorize?code=true&state=abc" {
		t.Fatalf("url %q", v.URL)
	}
	if _, err := r.Code(v.ID, "bad\ncode"); err == nil {
		t.Fatal("a code of two lines was typed")
	}
	if _, err := r.Code(v.ID, "good-code#state"); err != nil {
		t.Fatal(err)
	}
	wait(t, r, v.ID, func(v View) bool { return v.State == Done })
}

func TestAWrongCodeFailsTheLogin(t *testing.T) {
	cmd, file := fakeLogin(t)
	r := New(time.Minute)
	defer r.Close()
	v, _ := r.Start("pro", cmd(), checkFile(file))
	wait(t, r, v.ID, func(v View) bool { return v.AsksCode })
	if _, err := r.Code(v.ID, "wrong"); err != nil {
		t.Fatal(err)
	}
	v = wait(t, r, v.ID, func(v View) bool { return v.State == Failed })
	if !strings.Contains(v.Error, "exit status 1") {
		t.Fatalf("error %q", v.Error)
	}
}

// A login nobody finishes is given up at its timeout, its CLI killed and
// joined; Close ends the rest.
func TestALoginIsBounded(t *testing.T) {
	cmd, file := fakeLogin(t)
	r := New(300 * time.Millisecond)
	v, _ := r.Start("pro", cmd(), checkFile(file))
	v = wait(t, r, v.ID, func(v View) bool { return v.State == Failed })
	if !strings.Contains(v.Error, "did not finish within") {
		t.Fatalf("error %q", v.Error)
	}
	long := New(time.Hour)
	v, _ = long.Start("pro", cmd(), checkFile(file))
	long.Close()
	if v, _ = long.Get(v.ID); v.State != Failed {
		t.Fatalf("after Close: %+v", v)
	}
	r.Close()
}
