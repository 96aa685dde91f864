package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func response(id, status string, size int) store.Response {
	return store.Response{ID: id, Scope: "s", CreatedAt: at(time.Second), Status: status, Background: status != "completed",
		Previous: "", Owner: owner("a"), Input: []byte(`[]`), Object: []byte(`"` + strings.Repeat("x", max(0, size-4)) + `"`)}
}

func testResponses(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := store.ResponseLimits{MaxCount: 10, MaxBytes: 1 << 20}
	r := response("r1", "in_progress", 10)
	r.Previous = "r0"
	must(t, s.Responses.Put(c, r, lim))
	got, err := s.Responses.Get(c, "s", "r1")
	must(t, err)
	if got.ID != "r1" || got.Status != "in_progress" || !got.Background || got.Previous != "r0" || got.Owner != owner("a") ||
		!bytes.Equal(got.Object, r.Object) || !bytes.Equal(got.Input, r.Input) || !got.CreatedAt.Equal(r.CreatedAt) || got.Cancel {
		t.Fatalf("got %+v", got)
	}
	_, err = s.Responses.Get(c, "other-scope", "r1")
	wantErr(t, err, store.ErrNotFound)
	unfinished, err := s.Responses.Unfinished(c)
	must(t, err)
	if len(unfinished) != 1 || unfinished[0].ID != "r1" {
		t.Fatalf("unfinished = %+v", unfinished)
	}
	must(t, s.Responses.Update(c, "r1", "completed", []byte(`{"done":true}`), lim))
	got, _ = s.Responses.Get(c, "s", "r1")
	if got.Status != "completed" || string(got.Object) != `{"done":true}` {
		t.Fatalf("after the update: %+v", got)
	}
	// A finished response is not failed by a late orphan sweep.
	failed, err := s.Responses.Fail(c, "r1", []byte(`{}`))
	must(t, err)
	if failed {
		t.Fatal("a finished response was failed")
	}
	must(t, s.Responses.Put(c, response("r2", "queued", 10), lim))
	failed, err = s.Responses.Fail(c, "r2", []byte(`{"status":"failed"}`))
	must(t, err)
	if got, _ := s.Responses.Get(c, "s", "r2"); !failed || got.Status != "failed" {
		t.Fatalf("failed %v: %+v", failed, got)
	}
	count, size, err := s.Responses.Usage(c)
	must(t, err)
	if count != 2 || size != int64(len(`[]`)*2+len(`{"done":true}`)+len(`{"status":"failed"}`)) {
		t.Fatalf("usage %d, %d", count, size)
	}
	wantErr(t, s.Responses.Delete(c, "other-scope", "r1"), store.ErrNotFound)
	must(t, s.Responses.Delete(c, "s", "r1"))
	wantErr(t, s.Responses.Delete(c, "s", "r1"), store.ErrNotFound)
	wantErr(t, s.Responses.Update(c, "r1", "completed", []byte(`{}`), lim), store.ErrNotFound)
}

func ids(t *testing.T, s *store.Store) []string {
	t.Helper()
	var out []string
	for i := range 20 {
		if _, err := s.Responses.Get(ctx(t), "s", fmt.Sprint("r", i)); err == nil {
			out = append(out, fmt.Sprint("r", i))
		}
	}
	return out
}

func testResponseLedger(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	// Each response is 98 bytes: 2 of input, 96 of object.
	lim := store.ResponseLimits{MaxCount: 3, MaxBytes: 1 << 20}
	for i := range 3 {
		must(t, s.Responses.Put(c, response(fmt.Sprint("r", i), "completed", 98), lim))
	}
	// At the count bound, the next evicts the oldest finished one.
	must(t, s.Responses.Put(c, response("r3", "completed", 98), lim))
	if got := ids(t, s); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("kept %v", got)
	}
	// Under a byte bound of 300, a response of 198 evicts the two oldest.
	lim = store.ResponseLimits{MaxCount: 10, MaxBytes: 300}
	must(t, s.Responses.Put(c, response("r4", "completed", 198), lim))
	if got := ids(t, s); !slices.Equal(got, []string{"r3", "r4"}) {
		t.Fatalf("kept %v", got)
	}
	// Lowered bounds apply when enforced.
	must(t, s.Responses.Enforce(c, store.ResponseLimits{MaxCount: 1, MaxBytes: 1 << 20}))
	if got := ids(t, s); !slices.Equal(got, []string{"r4"}) {
		t.Fatalf("kept %v", got)
	}
}

func testResponseLedgerFull(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := store.ResponseLimits{MaxCount: 2, MaxBytes: 1 << 20}
	must(t, s.Responses.Put(c, response("r0", "in_progress", 98), lim))
	must(t, s.Responses.Put(c, response("r1", "in_progress", 98), lim))
	// Only running responses: nothing is evicted, the new one refused.
	wantErr(t, s.Responses.Put(c, response("r2", "completed", 98), lim), store.ErrFull)
	if got := ids(t, s); !slices.Equal(got, []string{"r0", "r1"}) {
		t.Fatalf("kept %v", got)
	}
	// A running response that ends is not evicted by its own end.
	must(t, s.Responses.Update(c, "r0", "completed", []byte(`"`+strings.Repeat("y", 200)+`"`), store.ResponseLimits{MaxCount: 2, MaxBytes: 150}))
	if got := ids(t, s); !slices.Equal(got, []string{"r0", "r1"}) {
		t.Fatalf("kept %v", got)
	}
	// Concurrent puts from several connections keep the count bound.
	lim = store.ResponseLimits{MaxCount: 4, MaxBytes: 1 << 20}
	errs := make(chan error, 10)
	for i := range 10 {
		go func() { errs <- s.Responses.Put(c, response(fmt.Sprint("c", i), "completed", 50), lim) }()
	}
	for range 10 {
		must(t, <-errs)
	}
	if n, _, _ := s.Responses.Usage(c); n != 4 {
		t.Fatalf("%d responses kept under a bound of 4", n)
	}
}

func testResponseCancel(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	lim := store.ResponseLimits{MaxCount: 10, MaxBytes: 1 << 20}
	must(t, s.Responses.Put(c, response("r1", "in_progress", 10), lim))
	if ok, err := s.Responses.AskCancel(c, "other", "r1"); err != nil || ok {
		t.Fatalf("another scope cancelled: %v %v", ok, err)
	}
	ok, err := s.Responses.AskCancel(c, "s", "r1")
	must(t, err)
	if got, _ := s.Responses.Get(c, "s", "r1"); !ok || !got.Cancel {
		t.Fatalf("cancel asked %v: %+v", ok, got)
	}
	must(t, s.Responses.Update(c, "r1", "cancelled", []byte(`{}`), lim))
	if ok, _ := s.Responses.AskCancel(c, "s", "r1"); ok {
		t.Fatal("a finished response was asked to cancel")
	}
}

func testSealKey(t *testing.T, e Engine) {
	s, another := e.New(t, 0, 0)
	c := ctx(t)
	k1, err := s.Responses.SealKey(c, []byte("first-key"))
	must(t, err)
	k2, err := another().Responses.SealKey(c, []byte("second-key"))
	must(t, err)
	if string(k1) != "first-key" || string(k2) != "first-key" {
		t.Fatalf("keys %q %q: the first stored is everyone's", k1, k2)
	}
}

func frames(from, n, size int) [][]byte {
	var out [][]byte
	for i := range n {
		f := fmt.Sprintf("event %d ", from+i)
		out = append(out, []byte(f+strings.Repeat(".", size-len(f))))
	}
	return out
}

func testEvents(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	_, err := s.Events.Read(c, "r1", -1, 100)
	wantErr(t, err, store.ErrNotFound)
	// Begun with no frames, a log is there to follow, empty and open;
	// beginning it again changes nothing.
	must(t, s.Events.Append(c, "r1", 0, nil, 1<<20))
	if log, err := s.Events.Read(c, "r1", -1, 100); err != nil || len(log.Frames) != 0 || log.Ended {
		t.Fatalf("a begun log: %+v %v", log, err)
	}
	must(t, s.Events.Append(c, "r1", 0, frames(0, 3, 20), 1<<20))
	must(t, s.Events.Append(c, "r1", 0, nil, 1<<20))
	must(t, s.Events.Append(c, "r1", 3, frames(3, 2, 20), 1<<20))
	log, err := s.Events.Read(c, "r1", -1, 100)
	must(t, err)
	if log.First != 0 || log.Kept != 0 || len(log.Frames) != 5 || log.Ended || !strings.HasPrefix(string(log.Frames[4]), "event 4 ") {
		t.Fatalf("log %+v", log)
	}
	log, _ = s.Events.Read(c, "r1", 2, 1)
	if log.First != 3 || len(log.Frames) != 1 || !strings.HasPrefix(string(log.Frames[0]), "event 3 ") {
		t.Fatalf("from 3, one frame: %+v", log)
	}
	log, _ = s.Events.Read(c, "r1", 4, 100)
	if log.First != 5 || len(log.Frames) != 0 {
		t.Fatalf("past the end: %+v", log)
	}
	must(t, s.Events.End(c, "r1"))
	if log, _ = s.Events.Read(c, "r1", 4, 100); !log.Ended {
		t.Fatal("the log did not end")
	}
	must(t, s.Events.Drop(c, "r1"))
	_, err = s.Events.Read(c, "r1", -1, 100)
	wantErr(t, err, store.ErrNotFound)
	// Evicting a response drops its log.
	lim := store.ResponseLimits{MaxCount: 1, MaxBytes: 1 << 20}
	must(t, s.Responses.Put(c, response("r2", "completed", 10), lim))
	must(t, s.Events.Append(c, "r2", 0, frames(0, 1, 20), 1<<20))
	must(t, s.Responses.Put(c, response("r3", "completed", 10), lim))
	_, err = s.Events.Read(c, "r2", -1, 100)
	wantErr(t, err, store.ErrNotFound)
}

func testEventTrim(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	// At 100 bytes, five frames of 20 fit; the sixth trims the first.
	must(t, s.Events.Append(c, "r", 0, frames(0, 5, 20), 100))
	if log, _ := s.Events.Read(c, "r", -1, 100); log.Kept != 0 || len(log.Frames) != 5 {
		t.Fatalf("at the bound: %+v", log)
	}
	must(t, s.Events.Append(c, "r", 5, frames(5, 1, 20), 100))
	log, err := s.Events.Read(c, "r", -1, 100)
	must(t, err)
	if log.Kept != 1 || log.First != 1 || len(log.Frames) != 5 {
		t.Fatalf("past the bound: kept %d first %d, %d frames", log.Kept, log.First, len(log.Frames))
	}
	// A frame larger than the bound is kept alone: a log keeps its last.
	must(t, s.Events.Append(c, "r", 6, frames(6, 1, 500), 100))
	log, _ = s.Events.Read(c, "r", -1, 100)
	if log.Kept != 6 || len(log.Frames) != 1 {
		t.Fatalf("after a large frame: %+v", log)
	}
}
