package notice

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func ev(key string, c Category, at time.Duration) Event {
	return Event{Key: key, Category: c, Title: "title " + key, Body: "body " + key, At: t0.Add(at)}
}

// drain runs Due at each moment it asks for until nothing is held.
func drain(s *State, p Policy) []Note {
	var out []Note
	for next := s.Next(p); !next.IsZero(); next = s.Next(p) {
		out = append(out, s.Due(p, next)...)
	}
	return out
}

func TestABurstIsOneNote(t *testing.T) {
	p, s := DefaultPolicy(), &State{}
	for i := range 10 { // ten in two seconds
		if n := s.Offer(p, ev(fmt.Sprint("k", i), Plan, time.Duration(i)*200*time.Millisecond)); n != nil {
			t.Fatalf("told at once: %+v", n)
		}
		if n := s.Due(p, t0.Add(time.Duration(i)*200*time.Millisecond+100*time.Millisecond)); n != nil {
			t.Fatalf("told inside the burst: %+v", n)
		}
	}
	notes := drain(s, p)
	if len(notes) != 1 || notes[0].Count != 10 || notes[0].Title != "Meridian: 10 updates" {
		t.Fatalf("notes: %+v", notes)
	}
	if want := "title k0\ntitle k1\ntitle k2\ntitle k3\ntitle k4\n… and 5 more"; notes[0].Body != want {
		t.Fatalf("body %q", notes[0].Body)
	}
}

func TestEventsApartAreToldApart(t *testing.T) {
	p, s := DefaultPolicy(), &State{}
	s.Offer(p, ev("window/pro/5h/80", Plan, 0))
	first := s.Due(p, t0.Add(p.Quiet))
	s.Offer(p, ev("benched/pro", Accounts, 10*time.Second))
	second := drain(s, p)
	if len(first) != 1 || first[0].Title != "title window/pro/5h/80" || len(second) != 1 || second[0].Count != 1 {
		t.Fatalf("first %+v second %+v", first, second)
	}
}

func TestAHoldIsBounded(t *testing.T) {
	p, s := DefaultPolicy(), &State{}
	for i := range 30 { // one a second: never quiet for 1.5 s
		s.Offer(p, ev(fmt.Sprint("k", i), Plan, time.Duration(i)*time.Second))
	}
	if next := s.Next(p); !next.Equal(t0.Add(p.Hold)) {
		t.Fatalf("next %v, want the hold's end", next)
	}
}

func TestCooldownsOutliveARestart(t *testing.T) {
	p, s := DefaultPolicy(), &State{}
	s.Offer(p, ev("benched/pro", Accounts, 0))
	if len(drain(s, p)) != 1 {
		t.Fatal("not told")
	}
	saved, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var again State // the companion restarted
	if err := json.Unmarshal(saved, &again); err != nil {
		t.Fatal(err)
	}
	if again.Offer(p, ev("benched/pro", Accounts, 30*time.Minute)); len(drain(&again, p)) != 0 {
		t.Fatal("told again inside its cooldown")
	}
	if again.Offer(p, ev("benched/pro", Accounts, p.Cooldown+time.Second)); len(drain(&again, p)) != 1 {
		t.Fatal("not told once its cooldown ended")
	}
	again.Forget(p, t0.Add(3*p.Cooldown))
	if len(again.Told) != 0 {
		t.Fatalf("kept %v", again.Told)
	}
}

func TestCategoriesSwitchedOffAndCritical(t *testing.T) {
	p := DefaultPolicy()
	p.Off = map[Category]bool{Plan: true, Recovery: true}
	s := &State{}
	if s.Offer(p, ev("w", Plan, 0)); len(drain(s, p)) != 0 {
		t.Fatal("a category switched off was told")
	}
	crit := ev("exhausted", Recovery, 0)
	crit.Critical = true
	if n := s.Offer(p, crit); len(n) != 1 || !n[0].Critical {
		t.Fatalf("recovery exhausted: %+v", n)
	}
	// A critical event is told again even inside its cooldown.
	crit.At = crit.At.Add(time.Minute)
	if n := s.Offer(p, crit); len(n) != 1 {
		t.Fatal("a critical event kept quiet")
	}
	// The same key twice in one burst is one event.
	s.Offer(p, ev("b", Accounts, 0))
	s.Offer(p, ev("b", Accounts, 100*time.Millisecond))
	if n := drain(s, p); len(n) != 1 || n[0].Count != 1 {
		t.Fatalf("one key twice: %+v", n)
	}
}
