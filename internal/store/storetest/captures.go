package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func testCaptures(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	var ids []int64
	for i, k := range []store.Capture{
		{At: at(0), Host: "a", Key: "ci", API: "messages", Model: "m1", Status: 200, Meta: []byte(`{"n":0}`), Request: []byte(`{"q":0}`), Answer: []byte("ok"), Size: 10},
		{At: at(time.Second), Host: "b", Key: "", API: "chat", Model: "m2", Status: 429, Meta: []byte(`{"n":1}`), Size: 10},
		{At: at(2 * time.Second), Host: "a", Key: "ci", API: "chat", Model: "m1", Status: 0, Meta: []byte(`{"n":2}`), Written: []byte(`[{}]`), Size: 10},
	} {
		id, err := s.Captures.Insert(c, k)
		must(t, err)
		if len(ids) > 0 && id <= ids[len(ids)-1] {
			t.Fatalf("capture %d got id %d after %d", i, id, ids[len(ids)-1])
		}
		ids = append(ids, id)
	}
	page, err := s.Captures.Page(c, store.CaptureFilter{}, 0, 2)
	must(t, err)
	if len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] || page[0].Request != nil || string(page[0].Meta) != `{"n":2}` {
		t.Fatalf("first page %+v", page)
	}
	for name, f := range map[string]store.CaptureFilter{
		"key ci":           {Key: "ci"},
		"failed":           {Failed: true},
		"ok chat":          {OK: true, API: "chat"},
		"host a, model m1": {Host: "a", Model: "m1"},
	} {
		got, err := s.Captures.Page(c, f, 0, 10)
		must(t, err)
		var ns []int64
		for _, g := range got {
			ns = append(ns, g.ID)
		}
		want := map[string][]int64{"key ci": {ids[2], ids[0]}, "failed": {ids[2], ids[1]}, "ok chat": nil, "host a, model m1": {ids[2], ids[0]}}[name]
		if fmt.Sprint(ns) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", name, ns, want)
		}
	}
	whole, err := s.Captures.Get(c, ids[0])
	must(t, err)
	if string(whole.Request) != `{"q":0}` || string(whole.Answer) != "ok" || !whole.At.Equal(at(0)) || whole.Key != "ci" {
		t.Fatalf("get %+v", whole)
	}
	if _, err := s.Captures.Get(c, -1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of no capture: %v", err)
	}
	since, err := s.Captures.Since(c, at(time.Second), 0, 10)
	must(t, err)
	if len(since) != 2 || since[0].ID != ids[1] || string(since[1].Written) != `[{}]` {
		t.Fatalf("since %+v", since)
	}
}

// testCapturePrune holds the bounds exactly: captures summing to the
// bytes bound are all kept, one byte more drops the oldest; those older
// than the age bound go.
func testCapturePrune(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	for i := range 4 {
		_, err := s.Captures.Insert(c, store.Capture{At: at(time.Duration(i) * time.Minute), Model: fmt.Sprint(i), Meta: []byte("{}"), Size: 100})
		must(t, err)
	}
	count := func() []string {
		got, err := s.Captures.Page(c, store.CaptureFilter{}, 0, 10)
		must(t, err)
		var ms []string
		for _, g := range got {
			ms = append(ms, g.Model)
		}
		return ms
	}
	must(t, s.Captures.Prune(c, at(-time.Hour), 400))
	if got := count(); len(got) != 4 {
		t.Fatalf("at the bytes bound: %v kept, want all 4", got)
	}
	must(t, s.Captures.Prune(c, at(-time.Hour), 399))
	if got := count(); fmt.Sprint(got) != "[3 2 1]" {
		t.Fatalf("a byte under: %v kept, want the newest 3", got)
	}
	must(t, s.Captures.Prune(c, at(2*time.Minute), 1<<30))
	if got := count(); fmt.Sprint(got) != "[3 2]" {
		t.Fatalf("age bound at 2 min: %v kept, want those at 2 and 3 min", got)
	}
}
