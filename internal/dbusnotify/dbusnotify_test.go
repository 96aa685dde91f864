package dbusnotify

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"
)

// privateBus runs a dbus-daemon of its own for the test and returns its
// address.
func privateBus(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "bus")
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address", "--address=unix:path="+sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dbus-daemon (Debian's dbus-daemon package): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(addr)
}

func connect(t *testing.T, addr string) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// daemon is a notification service that keeps what it is sent.
type daemon struct {
	mu   sync.Mutex
	got  []sent
	next uint32
}

type sent struct {
	app, summary, body string
	urgency            byte
	timeout            int32
}

func (d *daemon) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, _ := hints["urgency"].Value().(byte)
	d.got = append(d.got, sent{app, summary, body, u, timeout})
	d.next++
	return d.next, nil
}

// Notifications reach the service on a real bus with their urgency: a
// critical one never expires.
func TestShow(t *testing.T) {
	addr := privateBus(t)
	srv := connect(t, addr)
	d := &daemon{}
	if err := srv.Export(d, path, service); err != nil {
		t.Fatal(err)
	}
	if reply, err := srv.RequestName(service, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the name: %v %v", reply, err)
	}
	n := Over(connect(t, addr), "Meridian")
	ctx := context.Background()
	if id, err := n.Show(ctx, "profile pro at 80 %", "its 5-hour window resets at 14:00", false); err != nil || id != 1 {
		t.Fatalf("show: %d %v", id, err)
	}
	if id, err := n.Show(ctx, "Meridian stopped", "it crashed 4 times in 10 minutes", true); err != nil || id != 2 {
		t.Fatalf("show critical: %d %v", id, err)
	}
	want := []sent{{"Meridian", "profile pro at 80 %", "its 5-hour window resets at 14:00", 1, -1}, {"Meridian", "Meridian stopped", "it crashed 4 times in 10 minutes", 2, 0}}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) != 2 || d.got[0] != want[0] || d.got[1] != want[1] {
		t.Fatalf("the service got %+v", d.got)
	}
}

// Without a service on the bus, Show says so.
func TestShowWithoutAService(t *testing.T) {
	n := Over(connect(t, privateBus(t)), "Meridian")
	if _, err := n.Show(context.Background(), "t", "b", false); err == nil || !strings.Contains(err.Error(), "show a notification") {
		t.Fatalf("no service: %v", err)
	}
}
