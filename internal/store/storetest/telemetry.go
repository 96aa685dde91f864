package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func request(host string, i int) store.Request {
	return store.Request{Host: host, At: at(time.Duration(i) * time.Second), API: "messages", Client: "opencode", Conversation: "c1",
		Profile: "p", Model: "m", Effective: "m-1", Verdict: "continuation", Live: i%2 == 0, Replay: i%3 == 0, Stream: true,
		Queue: time.Millisecond, TTFT: 2 * time.Millisecond, Total: 3 * time.Millisecond,
		Input: 10, Output: 20, CacheRead: int64(i % 2), Cache: 1, Cost: 0.5, Status: 200, ErrorType: ""}
}

func testTelemetry(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	var recs []store.Request
	for i := range 6 {
		recs = append(recs, request("a", i))
	}
	failed := request("b", 6)
	failed.Status, failed.ErrorType, failed.Cost, failed.API = 529, "overloaded_error", -1, "chat"
	failed.ErrorMessage = "the CLI is overloaded: try again in 30 s — réessayez"
	failed.Route = "moved: seven_day 96%"
	recs = append(recs, failed)
	recs[1].Key, recs[2].Key, failed.Key = "ci", "ci", "laptop"
	recs[len(recs)-1] = failed
	must(t, s.Telemetry.Insert(c, recs))
	page, err := s.Telemetry.Page(c, store.RequestFilter{}, 0, 3)
	must(t, err)
	if len(page) != 3 || page[0].Host != "b" || page[0].Status != 529 || page[0].ErrorMessage != failed.ErrorMessage || page[0].Route != failed.Route || page[0].ID <= page[1].ID {
		t.Fatalf("first page %+v", page)
	}
	older, err := s.Telemetry.Page(c, store.RequestFilter{}, page[2].ID, 10)
	must(t, err)
	if len(older) != 4 {
		t.Fatalf("next page has %d", len(older))
	}
	got := older[0]
	want := request("a", 3)
	want.ID = got.ID
	if got != want {
		t.Fatalf("record round trip:\n got %+v\nwant %+v", got, want)
	}
	for _, tc := range []struct {
		f    store.RequestFilter
		want int
	}{
		{store.RequestFilter{Status: "error"}, 1},
		{store.RequestFilter{Status: "failed"}, 1},
		{store.RequestFilter{Status: "client"}, 0},
		{store.RequestFilter{Status: "ok"}, 6},
		{store.RequestFilter{Status: "529"}, 1},
		{store.RequestFilter{API: "chat"}, 1},
		{store.RequestFilter{Model: "m-1"}, 7},
		{store.RequestFilter{Client: "nobody"}, 0},
		{store.RequestFilter{Verdict: "continuation", MissedCache: true}, 2}, // i = 2, 4: no replay, no cache read
	} {
		page, err := s.Telemetry.Page(c, tc.f, 0, 100)
		must(t, err)
		if len(page) != tc.want {
			t.Errorf("filter %+v: %d records, want %d", tc.f, len(page), tc.want)
		}
	}
	between, err := s.Telemetry.Between(c, at(2*time.Second), at(4*time.Second))
	must(t, err)
	if len(between) != 2 || !between[0].At.Equal(at(2*time.Second)) {
		t.Fatalf("between: %+v", between)
	}
	tot, err := s.Telemetry.Totals(c)
	must(t, err)
	if tot.Requests != 7 || tot.Errors != 1 || tot.Replays != 3 || tot.Input != 70 || tot.CacheRead != 3 || tot.Cost != 3 ||
		tot.Unpriced != 1 || !tot.Since.Equal(at(0)) {
		t.Fatalf("totals %+v", tot)
	}
	by, err := s.Telemetry.ByHost(c)
	must(t, err)
	if len(by) != 2 || by[0] != (store.HostRequests{Host: "a", API: "messages", Status: 200, Count: 6}) ||
		by[1] != (store.HostRequests{Host: "b", API: "chat", Status: 529, Count: 1}) {
		t.Fatalf("by host %+v", by)
	}
	keys, err := s.Telemetry.ByKey(c, at(2*time.Second))
	must(t, err)
	// Since 2 s: records 2..5 (2 of key ci) and the failed one of laptop.
	if len(keys) != 3 || keys[0].Key != "" || keys[0].Requests != 3 ||
		keys[1] != (store.KeyRequests{Key: "ci", Requests: 1, Input: 10, Output: 20, CacheRead: 0, Cache: 1, Cost: 0.5, Last: at(2 * time.Second)}) ||
		keys[2].Key != "laptop" || keys[2].Errors != 1 || keys[2].Cost != 0 || !keys[2].Last.Equal(at(6*time.Second)) {
		t.Fatalf("by key %+v", keys)
	}
	page, _ = s.Telemetry.Page(c, store.RequestFilter{Key: "ci"}, 0, 10)
	if len(page) != 2 || page[0].Key != "ci" {
		t.Fatalf("the records of key ci: %+v", page)
	}
}

func testTelemetryPrune(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	var recs []store.Request
	for i := range 10 {
		recs = append(recs, request(fmt.Sprint("h", i%2), i))
	}
	must(t, s.Telemetry.Insert(c, recs))
	must(t, s.Telemetry.Prune(c, at(2*time.Second), 5))
	page, _ := s.Telemetry.Page(c, store.RequestFilter{}, 0, 100)
	if len(page) != 5 || !page[4].At.Equal(at(5*time.Second)) {
		t.Fatalf("after pruning to 5: %d records, oldest %v", len(page), page[len(page)-1].At)
	}
	tot, _ := s.Telemetry.Totals(c)
	if tot.Requests != 5 {
		t.Fatalf("totals after the prune: %+v", tot)
	}
	empty := open(t, e)
	tot, err := empty.Telemetry.Totals(c)
	must(t, err)
	if tot.Requests != 0 || !tot.Since.IsZero() {
		t.Fatalf("an empty history: %+v", tot)
	}
}
