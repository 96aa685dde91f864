package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/store"
)

// profile is a gateway stand-in: it says which profile served the
// conversation and which host holds it, and answers or refuses.
type profile struct {
	name     string
	servedBy string
	holder   store.Owner
	running  int
	size     int
	refuse   *gateway.Error // nil: it answers
	asked    *[]string      // every profile asked to answer, in order
	windows  []gateway.RateWindow
}

func (p *profile) Profile() string { return p.name }

func (p *profile) Messages(context.Context, gateway.Request, string, gateway.Output) error {
	*p.asked = append(*p.asked, p.name)
	if p.refuse != nil {
		return p.refuse
	}
	return nil
}

func (p *profile) ServedBy(context.Context, gateway.Request) (string, error) { return p.servedBy, nil }

func (p *profile) HeldBy(context.Context, gateway.Request) (store.Owner, error) {
	return p.holder, nil
}

func (p *profile) Slots() (inUse, waiting, size int) { return p.running, 0, p.size }

func (p *profile) RateWindows() []gateway.RateWindow { return p.windows }

// output is an answer nothing has reached yet, unless committed.
type output struct{ committed bool }

func (o *output) Start(gateway.Start) error             { return nil }
func (o *output) BlockStart(int, json.RawMessage) error { return nil }
func (o *output) BlockDelta(int, json.RawMessage) error { return nil }
func (o *output) BlockStop(int) error                   { return nil }
func (o *output) Abandon(int)                           {}
func (o *output) Flush() error                          { return nil }
func (o *output) Finish(gateway.Finish) error           { return nil }
func (o *output) Committed() bool                       { return o.committed }

// profiles are a, b and c in that order, a the default, each of them
// failover may move requests to; edit changes them before the dispatcher
// is made.
func profiles(asked *[]string, edit func(map[string]*profile)) (*Dispatcher, map[string]*profile) {
	by := map[string]*profile{}
	var list []Profile
	for _, name := range []string{"a", "b", "c"} {
		p := &profile{name: name, size: 2, asked: asked}
		by[name] = p
		list = append(list, Profile{Name: name, Fallback: true, answerer: p})
	}
	if edit != nil {
		edit(by)
	}
	return New(Config{Profiles: list, Failover: true, def: by["a"]}), by
}

func refusal(status int, wait time.Duration) *gateway.Error {
	return &gateway.Error{Status: status, Type: anthropic.ErrRateLimit, RetryAfter: wait, Message: "refused"}
}

// A conversation stays with the profile that served it last, within what
// the caller's key may use; a new one goes to the default, or to the
// first profile by priority the key may use.
func TestWhichProfileAnswers(t *testing.T) {
	for _, c := range []struct {
		name     string
		servedBy string
		allowed  []string // nil: any
		want     string   // "" for a 403
	}{
		{name: "a new conversation", want: "a"},
		{name: "one another profile served", servedBy: "b", want: "b"},
		{name: "one a removed profile served", servedBy: "gone", want: "a"},
		{name: "one a profile the key may not use served", servedBy: "b", allowed: []string{"a", "c"}, want: "a"},
		{name: "a key that may not use the default", allowed: []string{"c", "b"}, want: "b"},
		{name: "a key that may use none", allowed: []string{"z"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			d, _ := profiles(&asked, func(by map[string]*profile) { by["a"].servedBy = c.servedBy })
			call := Call{}
			if c.allowed != nil {
				call.Allowed = func(p string) bool { return slices.Contains(c.allowed, p) }
			}
			var heard []string
			call.Answering = func(p, _ string) { heard = append(heard, p) }
			err := d.Answer(context.Background(), call, &output{})
			var ge *gateway.Error
			switch {
			case c.want == "":
				if !errors.As(err, &ge) || ge.Status != http.StatusForbidden || len(asked) != 0 {
					t.Fatalf("got %v, asked %v: want a 403 and nobody asked", err, asked)
				}
			case err != nil || !slices.Equal(asked, []string{c.want}) || !slices.Equal(heard, asked):
				t.Fatalf("got %v, asked %v, heard %v: want %s alone", err, asked, heard, c.want)
			}
		})
	}
}

// A refusal for a rate limit or overload, before anything reached the
// client, benches the profile and moves the request to the next one by
// priority that is not benched; anything else ends it where it is.
func TestFailoverOrder(t *testing.T) {
	for _, c := range []struct {
		name      string
		refusing  map[string]*gateway.Error
		committed bool
		asked     []string
		status    int // of the answer's error; 0 for none
	}{
		{name: "the first answers", asked: []string{"a"}},
		{name: "a rate limit moves on", refusing: map[string]*gateway.Error{"a": refusal(429, time.Minute)}, asked: []string{"a", "b"}},
		{name: "an overload moves on", refusing: map[string]*gateway.Error{"a": refusal(anthropic.StatusOverloaded, time.Minute)}, asked: []string{"a", "b"}},
		{name: "two refuse", refusing: map[string]*gateway.Error{"a": refusal(429, time.Minute), "b": refusal(429, time.Minute)}, asked: []string{"a", "b", "c"}},
		{name: "all refuse", refusing: map[string]*gateway.Error{"a": refusal(429, 3*time.Minute), "b": refusal(429, time.Minute), "c": refusal(429, 2*time.Minute)},
			asked: []string{"a", "b", "c"}, status: http.StatusTooManyRequests},
		{name: "another error stays", refusing: map[string]*gateway.Error{"a": refusal(500, 0)}, asked: []string{"a"}, status: 500},
		{name: "a started answer stays", refusing: map[string]*gateway.Error{"a": refusal(429, time.Minute)}, committed: true,
			asked: []string{"a"}, status: http.StatusTooManyRequests},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			d, _ := profiles(&asked, func(by map[string]*profile) {
				for name, e := range c.refusing {
					by[name].refuse = e
				}
			})
			err := d.Answer(context.Background(), Call{}, &output{committed: c.committed})
			var ge *gateway.Error
			status := 0
			if errors.As(err, &ge) {
				status = ge.Status
			}
			if !slices.Equal(asked, c.asked) || status != c.status {
				t.Fatalf("asked %v, ended %v: want %v and status %d", asked, err, c.asked, c.status)
			}
			if c.name == "all refuse" && (ge.RetryAfter <= 0 || ge.RetryAfter > time.Minute) {
				t.Fatalf("every profile refused: the wait is %s, want the earliest reopening (within a minute)", ge.RetryAfter)
			}
		})
	}
}

// A benched profile is passed over by the requests after the refusal
// until its wait has passed.
func TestABenchedProfileIsPassedOver(t *testing.T) {
	var asked []string
	now := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	d, by := profiles(&asked, func(by map[string]*profile) { by["a"].refuse = refusal(429, time.Minute) })
	d.cfg.Now = func() time.Time { return now }
	ctx := context.Background()
	if err := d.Answer(ctx, Call{}, &output{}); err != nil || !slices.Equal(asked, []string{"a", "b"}) {
		t.Fatalf("asked %v (%v)", asked, err)
	}
	by["a"].refuse = nil
	asked = nil
	if err := d.Answer(ctx, Call{}, &output{}); err != nil || !slices.Equal(asked, []string{"b"}) {
		t.Fatalf("while a is benched, asked %v (%v): want b alone", asked, err)
	}
	now = now.Add(61 * time.Second)
	asked = nil
	if err := d.Answer(ctx, Call{}, &output{}); err != nil || !slices.Equal(asked, []string{"a"}) {
		t.Fatalf("after a's wait, asked %v (%v): want a again", asked, err)
	}
}

// hosts are this host and the others of a cluster, as the heartbeats
// tell.
type hosts struct {
	self  store.Owner
	beats []store.Host
}

func (h hosts) Self() store.Owner { return h.self }

func (h hosts) Host(_ context.Context, o store.Owner) (store.Host, bool, error) {
	for _, b := range h.beats {
		if b.Owner == o {
			return b, true, nil
		}
	}
	return store.Host{}, false, nil
}

func (h hosts) Hosts(context.Context) ([]store.Host, error) { return h.beats, nil }

func (h hosts) Unreachable(context.Context, store.Owner) {}

// A conversation's turn goes to the host that holds it while that host
// serves; a new conversation stays here while a slot is free, else goes
// to the serving host with the fewest running turns, if fewer than here.
func TestWhichHostAnswers(t *testing.T) {
	self := store.Owner{Host: "here", Incarnation: "1"}
	other := func(name string, state string, running int) store.Host {
		return store.Host{Owner: store.Owner{Host: name, Incarnation: "1"}, Addr: "http://" + name, State: state, Running: running}
	}
	for _, c := range []struct {
		name    string
		holder  store.Owner
		running int // here, of 2 slots
		beats   []store.Host
		want    string // "" for here
	}{
		{name: "held here", holder: self, beats: []store.Host{{Owner: self, Addr: "http://here", State: store.HostServing}, other("b", store.HostServing, 0)}},
		{name: "held by a serving host", holder: other("b", "", 0).Owner, beats: []store.Host{other("b", store.HostServing, 5)}, want: "b"},
		{name: "held by a draining host", holder: other("b", "", 0).Owner, beats: []store.Host{other("b", store.HostDraining, 0)}},
		{name: "held by a host gone", holder: other("b", "", 0).Owner},
		{name: "held by an earlier life of a host", holder: store.Owner{Host: "b", Incarnation: "0"}, beats: []store.Host{other("b", store.HostServing, 0)}},
		{name: "new, a slot free here", running: 1, beats: []store.Host{other("b", store.HostServing, 0)}},
		{name: "new, full here", running: 2, beats: []store.Host{other("b", store.HostServing, 1), other("c", store.HostServing, 0), other("d", store.HostDraining, 0)}, want: "c"},
		{name: "new, full everywhere", running: 2, beats: []store.Host{other("b", store.HostServing, 2), other("c", store.HostServing, 3)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			d, _ := profiles(&asked, func(by map[string]*profile) { by["a"].holder, by["a"].running = c.holder, c.running })
			d.cfg.Hosts = hosts{self: self, beats: c.beats}
			target, ok := d.Route(context.Background(), Call{})
			if got := map[bool]string{true: target.Host}[ok]; got != c.want {
				t.Fatalf("routed to %q (%v), want %q", got, ok, c.want)
			}
			if ok && target.Addr != "http://"+c.want {
				t.Fatalf("routed to %s", target.Addr)
			}
		})
	}
}
