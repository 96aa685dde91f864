package alerts

import (
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func TestCrossingsOncePerThresholdAndPeriod(t *testing.T) {
	reset := t0.Add(2 * time.Hour)
	got := Crossings("pro", []Window{
		{Name: "five_hour", Used: 0.83, ResetsAt: reset},
		{Name: "seven_day", Used: 0.4, ResetsAt: t0.Add(90 * time.Hour)},
		{Name: "seven_day_opus", Used: 1, ResetsAt: t0.Add(-time.Minute)}, // reset already
	}, DefaultThresholds, t0)
	if len(got) != 1 || got[0].Kind != KindWindow || got[0].Key != "window/pro/five_hour/80/"+itoa(reset) ||
		got[0].Message != "profile pro: its five_hour window is 83% used (alert at 80%); it resets at 14:00 UTC, Dec 5" {
		t.Fatalf("crossings %+v", got)
	}
	// The same crossing later in the period has the same key; 100 % is a
	// new one; extra usage is its own.
	again := Crossings("pro", []Window{{Name: "five_hour", Used: 0.9, ResetsAt: reset}}, DefaultThresholds, t0.Add(time.Minute))
	full := Crossings("pro", []Window{{Name: "five_hour", Used: 1, ResetsAt: reset, Overage: true}}, DefaultThresholds, t0.Add(time.Minute))
	if again[0].Key != got[0].Key || len(full) != 2 || full[0].Kind != KindOverage || full[1].Key != "window/pro/five_hour/100/"+itoa(reset) {
		t.Fatalf("again %+v, full %+v", again, full)
	}
	if none := Crossings("pro", []Window{{Name: "five_hour", Used: 0.5, ResetsAt: reset}}, DefaultThresholds, t0); len(none) != 0 {
		t.Fatalf("below every threshold: %+v", none)
	}
}

func TestBenchedOncePerBench(t *testing.T) {
	a, b := Benched("pro", t0.Add(time.Hour+10*time.Second), t0), Benched("pro", t0.Add(time.Hour+20*time.Second), t0.Add(time.Second))
	if a.Key != b.Key || a.Kind != KindBenched {
		t.Fatalf("%+v %+v", a, b)
	}
}

func itoa(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestBackAndLoggedOut(t *testing.T) {
	until := t0.Add(time.Hour)
	if a, b := Back("pro", until, t0), Back("pro", until.Add(5*time.Second), t0.Add(time.Minute)); a.Key != b.Key || a.Kind != KindBack {
		t.Fatalf("one bench's end has one key: %+v %+v", a, b)
	}
	a, b, c := LoggedOut("pro", t0), LoggedOut("pro", t0.Add(time.Hour)), LoggedOut("pro", t0.Add(24*time.Hour))
	if a.Key != b.Key || a.Key == c.Key || a.Message != "profile pro is not logged in (the upstream refused its credentials): log it in again with `meridian profile login pro`" {
		t.Fatalf("once a day: %+v %+v %+v", a, b, c)
	}
}
