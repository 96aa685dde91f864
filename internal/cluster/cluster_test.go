package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite/sqlitetest"
)

func openStore(t *testing.T) *store.Store {
	return sqlitetest.Open(t)
}

func TestHostIDIsStablePerDataDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	idA, err := HostID(a)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := HostID(a)
	idB, _ := HostID(b)
	if idA != again || idA == idB || !validID.MatchString(idA) {
		t.Fatalf("ids %q, %q again, %q for another data dir", idA, again, idB)
	}
	if err := os.WriteFile(filepath.Join(a, hostIDFile), []byte("not a host id!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := HostID(a); err == nil || !strings.Contains(err.Error(), "not a host id") {
		t.Fatalf("a broken host-id file: %v", err)
	}
}

// Liveness: this process is alive; another process on this host is as
// alive as the kernel says; one on another host lives while its
// heartbeat has not expired, and a host with no heartbeat is gone.
func TestAlive(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Now()
	r := New(Config{Hosts: st.Hosts, Host: "a", Expiry: time.Minute, Now: func() time.Time { return now }})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	other := store.Owner{Host: "b", Incarnation: "7:7"}
	for _, tc := range []struct {
		name  string
		owner store.Owner
		beat  *time.Time
		want  bool
	}{
		{"self", r.Self(), nil, true},
		{"gone process here", store.Owner{Host: "a", Incarnation: "999999999:1"}, nil, false},
		{"no heartbeat elsewhere", other, nil, false},
		{"heartbeat elsewhere", other, new(now.Add(time.Second)), true},
		{"expired heartbeat elsewhere", other, new(now.Add(-time.Second)), false},
	} {
		if tc.beat != nil {
			if err := st.Hosts.Beat(ctx, store.Host{Owner: other, Started: now, Expires: *tc.beat}); err != nil {
				t.Fatal(err)
			}
		}
		alive, err := r.Alive(ctx, tc.owner)
		if err != nil || alive != tc.want {
			t.Errorf("%s: alive %v, %v", tc.name, alive, err)
		}
	}
	hosts, err := r.Hosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].Owner != r.Self() {
		t.Fatalf("hosts %+v %v: only this one's heartbeat is current", hosts, err)
	}
}

// Start beats at once and then on a timer; Close takes the heartbeat
// away, so other hosts know at once that this one is gone.
func TestBeatsUntilClose(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	r := New(Config{Hosts: st.Hosts, Host: "a", Addr: "127.0.0.2:3456", Version: "v", Expiry: 300 * time.Millisecond})
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	first, ok, err := st.Hosts.Get(ctx, r.Self())
	if err != nil || !ok || first.Addr != "127.0.0.2:3456" {
		t.Fatalf("first beat %+v %v %v", first, ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		h, _, _ := st.Hosts.Get(ctx, r.Self())
		if h.Expires.After(first.Expires) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no second beat")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.Close()
	if _, ok, _ := st.Hosts.Get(ctx, r.Self()); ok {
		t.Fatal("the heartbeat outlived Close")
	}
}

// The members of a cluster: each beat carries the host's address once it
// listens, its load and whether it drains; a host whose heartbeat expired
// is listed gone for an hour, then forgotten.
func TestMembers(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Now()
	clock := func() time.Time { return now }
	a := New(Config{Hosts: st.Hosts, Host: "a", Expiry: time.Minute, Now: clock})
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Report(func() (int, int) { return 3, 1 })
	if err := a.Advertise(ctx, "http://127.0.0.2:3456"); err != nil {
		t.Fatal(err)
	}
	if err := st.Hosts.Beat(ctx, store.Host{Owner: store.Owner{Host: "b", Incarnation: "1"}, Addr: "http://127.0.0.3:3456",
		Started: now.Add(-time.Hour), Expires: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	members, err := a.Members(ctx)
	if err != nil || len(members) != 2 {
		t.Fatalf("members %+v %v", members, err)
	}
	self, gone := members[0], members[1]
	if !self.Self || self.Addr != "http://127.0.0.2:3456" || self.State != store.HostServing || self.Live != 3 || self.Running != 1 {
		t.Fatalf("this host: %+v", self)
	}
	if gone.Self || gone.State != Gone {
		t.Fatalf("the host whose heartbeat expired: %+v", gone)
	}
	a.Drain(ctx)
	if members, _ = a.Members(ctx); members[0].State != store.HostDraining {
		t.Fatalf("after Drain: %+v", members[0])
	}
	now = now.Add(2 * time.Hour)
	if err := a.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if members, _ = a.Members(ctx); len(members) != 1 || !members[0].Self {
		t.Fatalf("an hour after its expiry a gone host is forgotten: %+v", members)
	}
}

// flakyHosts fails its beats while down is set.
type flakyHosts struct {
	store.Hosts
	down  bool
	beats int
}

func (f *flakyHosts) Beat(ctx context.Context, h store.Host) error {
	f.beats++
	if f.down {
		return errors.New("store down")
	}
	return f.Hosts.Beat(ctx, h)
}

// The store is out of reach only after two beats failed in a row; while
// it is, Reachable looks again itself, at most once a second, and sees
// it back at once.
func TestReachable(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	hosts := &flakyHosts{Hosts: openStore(t).Hosts}
	r := New(Config{Hosts: hosts, Host: "a", Expiry: time.Hour, Now: func() time.Time { return now }})
	if err := r.beat(ctx); err != nil || !r.Reachable(ctx) {
		t.Fatalf("a beat that went through: %v", err)
	}
	hosts.down = true
	_ = r.beat(ctx)
	if !r.Reachable(ctx) {
		t.Fatal("one failed beat took the store for out of reach")
	}
	_ = r.beat(ctx)
	beats := hosts.beats
	if r.Reachable(ctx) || hosts.beats != beats {
		t.Fatalf("after two failed beats: reachable, or it beat again within a second (%d beats)", hosts.beats-beats)
	}
	now = now.Add(recheck)
	hosts.down = false
	if !r.Reachable(ctx) || hosts.beats != beats+1 {
		t.Fatalf("a second later, with the store back: not reachable (%d beats)", hosts.beats-beats)
	}
}

// A host found unreachable is taken for gone — by Alive, Host and Hosts —
// until it beats again; a newer beat brings it back at once.
func TestUnreachableUntilItBeatsAgain(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := time.Now()
	clock := func() time.Time { return now }
	self := New(Config{Hosts: st.Hosts, Host: "a", Expiry: time.Minute, Now: clock})
	other := New(Config{Hosts: st.Hosts, Host: "b", Expiry: time.Minute, Now: clock})
	for _, r := range []*Registry{self, other} {
		if err := r.beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b := other.Self()
	alive := func() bool {
		t.Helper()
		ok, err := self.Alive(ctx, b)
		_, hostOK, herr := self.Host(ctx, b)
		hosts, lerr := self.Hosts(ctx)
		if err != nil || herr != nil || lerr != nil || ok != hostOK || ok != (len(hosts) == 2) {
			t.Fatalf("Alive %v %v, Host %v %v, Hosts %d %v disagree", ok, err, hostOK, herr, len(hosts), lerr)
		}
		return ok
	}
	if !alive() {
		t.Fatal("a host that beat is gone")
	}
	self.Unreachable(ctx, b)
	if alive() {
		t.Fatal("a host found unreachable is still taken for alive")
	}
	now = now.Add(time.Second)
	if err := other.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if !alive() {
		t.Fatal("a host that beat again after it was found unreachable is still gone")
	}
}
