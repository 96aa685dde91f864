package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
)

func conversation(profile, key string) store.Conversation {
	return store.Conversation{Profile: profile, Key: key, Client: "opencode", SessionID: "sess-" + key,
		Digests: []byte{1, 2, 3, 4}, Pins: `["a"]`, Tail: []byte{9}, Slot: true, Messages: 1,
		Cwd: "/w", ClientCwd: "/c", Model: "m", Continuations: 2, Compactions: 1, Undos: 3, Divergences: 4, LastInputBytes: 77, Holder: owner("a")}
}

func testConversations(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	_, ok, err := s.Conversations.Load(c, "p", "k")
	must(t, err)
	if ok {
		t.Fatal("a conversation never published was found")
	}
	in := conversation("p", "k")
	v, err := s.Conversations.Publish(c, in, store.Publish{Now: at(time.Second), Consumed: []string{"t1", "t2"}})
	must(t, err)
	if v != 1 {
		t.Fatalf("first version = %d", v)
	}
	got, ok, err := s.Conversations.Load(c, "p", "k")
	must(t, err)
	want := in
	want.Version, want.CreatedAt, want.UpdatedAt = 1, at(time.Second), at(time.Second)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %v\n got %+v\nwant %+v", ok, got, want)
	}
	next := got
	next.SessionID, next.Digests, next.Slot, next.Messages = "sess-2", []byte{5, 6}, false, 2
	// The CLI's transcript is shared while the conversation is at its
	// session, and replaced by the next share; a share of another session
	// is refused.
	if _, _, ok, err := s.Conversations.Transcript(c, "p", "k"); err != nil || ok {
		t.Fatalf("a transcript never shared: %v %v", ok, err)
	}
	for _, data := range [][]byte{[]byte("first"), []byte("second")} {
		if ok, err := s.Conversations.ShareTranscript(c, "p", "k", "sess-k", data); err != nil || !ok {
			t.Fatalf("sharing the session's transcript: %v %v", ok, err)
		}
	}
	if ok, err := s.Conversations.ShareTranscript(c, "p", "k", "sess-other", []byte("stale")); err != nil || ok {
		t.Fatalf("sharing another session's transcript: %v %v", ok, err)
	}
	if session, data, ok, err := s.Conversations.Transcript(c, "p", "k"); err != nil || !ok || session != "sess-k" || string(data) != "second" {
		t.Fatalf("the shared transcript: %q %q %v %v", session, data, ok, err)
	}
	// Another process published this turn: it holds the conversation now.
	next.Holder = owner("b")
	v, err = s.Conversations.Publish(c, next, store.Publish{Prev: 1, Now: at(2 * time.Second)})
	must(t, err)
	if v != 2 {
		t.Fatalf("second version = %d", v)
	}
	got, _, err = s.Conversations.Load(c, "p", "k")
	must(t, err)
	if got.Version != 2 || got.SessionID != "sess-2" || got.Slot || got.Holder != owner("b") ||
		!got.CreatedAt.Equal(at(time.Second)) || !got.UpdatedAt.Equal(at(2*time.Second)) {
		t.Fatalf("after the second publish: %+v", got)
	}
	// The same key under another profile is another conversation.
	_, err = s.Conversations.Publish(c, conversation("q", "k"), store.Publish{Now: at(3 * time.Second)})
	must(t, err)
	latest, ok, err := s.Conversations.Latest(c, "k")
	must(t, err)
	if !ok || latest.Profile != "q" || latest.Key != "k" || latest.Version != 1 {
		t.Fatalf("latest %+v (%v), want the last to answer (q)", latest, ok)
	}
	if latest, ok, err := s.Conversations.Latest(c, "nobody"); err != nil || ok || latest.Profile != "" {
		t.Fatalf("latest of a conversation nobody answered: %+v, %v, %v", latest, ok, err)
	}
	list, err := s.Conversations.List(c, "p", 10)
	must(t, err)
	if len(list) != 1 || list[0].Key != "k" {
		t.Fatalf("list = %+v", list)
	}
	ids, err := s.Conversations.SessionIDs(c)
	must(t, err)
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"sess-2", "sess-k"}) {
		t.Fatalf("session ids = %v", ids)
	}
	done, err := s.Conversations.Consumed(c, "p", "k", []string{"t0", "t1", "t2"})
	must(t, err)
	if !slices.Equal(done, []string{"t1", "t2"}) {
		t.Fatalf("consumed = %v", done)
	}
	if done, _ := s.Conversations.Consumed(c, "q", "k", []string{"t1"}); len(done) != 0 {
		t.Fatalf("another profile's conversation sees %v consumed", done)
	}
}

func testConversationBound(t *testing.T, e Engine) {
	s, _ := e.New(t, 3, 0)
	c := ctx(t)
	for i := range 5 {
		_, err := s.Conversations.Publish(c, conversation("p", fmt.Sprint("k", i)), store.Publish{Now: at(time.Duration(i) * time.Second)})
		must(t, err)
	}
	list, err := s.Conversations.List(c, "p", 10)
	must(t, err)
	var keys []string
	for _, m := range list {
		keys = append(keys, m.Key)
	}
	if !slices.Equal(keys, []string{"k4", "k3", "k2"}) {
		t.Fatalf("kept %v, want the 3 newest", keys)
	}
}

func testPublishConflict(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	_, err := s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Now: at(0)})
	must(t, err)
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Now: at(0)})
	wantErr(t, err, store.ErrConflict)
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 1, Now: at(time.Second)})
	must(t, err)
	// A turn that loaded version 1 lost to the one that published 2; its
	// delivered tool results are not recorded either.
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 1, Now: at(2 * time.Second), Consumed: []string{"x"}})
	wantErr(t, err, store.ErrConflict)
	if done, _ := s.Conversations.Consumed(c, "p", "k", []string{"x"}); len(done) != 0 {
		t.Fatal("a refused publish recorded its tool results")
	}
}

func testPublishFenced(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	claim := store.LeaseClaim{Profile: "p", Key: "k", Token: "old", Owner: owner("a"), Now: at(0), TTL: time.Second}
	g, err := s.Leases.Acquire(c, claim)
	must(t, err)
	if !g.Taken {
		t.Fatal("a free lease was not taken")
	}
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Fence: "old", Now: at(0)})
	must(t, err)
	// The holder stalls past its expiry; a successor takes the lease.
	next := claim
	next.Token, next.Owner, next.Now = "new", owner("b"), at(2*time.Second)
	g, err = s.Leases.Acquire(c, next)
	must(t, err)
	if !g.Taken || g.Version != 1 {
		t.Fatal("an expired lease was not taken")
	}
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 1, Fence: "old", Now: at(3 * time.Second), Consumed: []string{"x"}})
	wantErr(t, err, store.ErrFenced)
	got, _, _ := s.Conversations.Load(c, "p", "k")
	if got.Version != 1 {
		t.Fatalf("the stale holder's publish was stored: version %d", got.Version)
	}
	if done, _ := s.Conversations.Consumed(c, "p", "k", []string{"x"}); len(done) != 0 {
		t.Fatal("a fenced publish recorded its tool results")
	}
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 1, Fence: "new", Now: at(3 * time.Second)})
	must(t, err)
	// Released, the lease fences every token.
	must(t, s.Leases.Release(c, "p", "k", "new"))
	_, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: 2, Fence: "new", Now: at(4 * time.Second)})
	wantErr(t, err, store.ErrFenced)
}

func testConsumedBound(t *testing.T, e Engine) {
	s, _ := e.New(t, 0, 4)
	c := ctx(t)
	v := int64(0)
	for i := range 3 {
		var err error
		v, err = s.Conversations.Publish(c, conversation("p", "k"), store.Publish{Prev: v, Now: at(time.Duration(i) * time.Second),
			Consumed: []string{fmt.Sprint("a", i), fmt.Sprint("b", i)}})
		must(t, err)
	}
	done, err := s.Conversations.Consumed(c, "p", "k", []string{"a0", "b0", "a1", "b1", "a2", "b2"})
	must(t, err)
	if !slices.Equal(done, []string{"a1", "b1", "a2", "b2"}) {
		t.Fatalf("kept %v, want the 4 newest", done)
	}
}

// A conversation answered under profile a and then b leaves a's copy
// superseded: pruned once unused for the grace, with what it pinned,
// unless a turn holds it or it is newer than b's.
func testPruneSuperseded(t *testing.T, e Engine) {
	s, c := open(t, e), ctx(t)
	publish := func(profile, key string, when time.Duration, consumed ...string) {
		t.Helper()
		conv := conversation(profile, key)
		conv.SessionID = "sess-" + profile + "-" + key
		prev := int64(0)
		if got, ok, err := s.Conversations.Load(c, profile, key); err != nil {
			t.Fatal(err)
		} else if ok {
			prev = got.Version
		}
		_, err := s.Conversations.Publish(c, conv, store.Publish{Prev: prev, Now: at(when), Consumed: consumed})
		must(t, err)
	}
	publish("a", "moved", 1*time.Second, "t1") // answered by a, then b: a's copy is superseded
	publish("b", "moved", 2*time.Second)       //
	publish("a", "back", 1*time.Second)        // a, then b, then a again: b's copy is
	publish("b", "back", 2*time.Second)        //
	publish("a", "back", 3*time.Second)        //
	publish("a", "alone", 1*time.Second)       // one profile: never superseded
	publish("a", "leased", 1*time.Second)      // superseded, but a turn holds it
	publish("b", "leased", 2*time.Second)      //
	publish("a", "recent", 50*time.Second)     // superseded within the grace
	publish("b", "recent", 60*time.Second)     //
	g, err := s.Leases.Acquire(c, store.LeaseClaim{Profile: "a", Key: "leased", Token: "t", Owner: owner("a"), Now: at(9 * time.Second), TTL: 10 * time.Second})
	must(t, err)
	if !g.Taken {
		t.Fatal("a free lease was not taken")
	}
	if ok, err := s.Conversations.ShareTranscript(c, "a", "moved", "sess-a-moved", []byte("transcript")); err != nil || !ok {
		t.Fatalf("share: %v %v", ok, err)
	}

	// Nothing is unused for long enough before 1 s.
	got, err := s.Conversations.PruneSuperseded(c, store.PruneCopies{Before: at(time.Second), Now: at(10 * time.Second), Limit: 100})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("pruned within the grace: %v", got)
	}
	// A limit of one takes the oldest.
	got, err = s.Conversations.PruneSuperseded(c, store.PruneCopies{Before: at(10 * time.Second), Now: at(10 * time.Second), Limit: 1})
	must(t, err)
	if !slices.Equal(got, []string{"sess-a-moved"}) {
		t.Fatalf("pruned %v, want a's copy of moved", got)
	}
	if _, ok, _ := s.Conversations.Load(c, "a", "moved"); ok {
		t.Fatal("the pruned copy still loads")
	}
	if _, _, ok, _ := s.Conversations.Transcript(c, "a", "moved"); ok {
		t.Fatal("the pruned copy's transcript is kept")
	}
	if done, _ := s.Conversations.Consumed(c, "a", "moved", []string{"t1"}); len(done) != 0 {
		t.Fatal("the pruned copy's delivered tool results are kept")
	}
	if l, ok, _ := s.Conversations.Latest(c, "moved"); !ok || l.Profile != "b" {
		t.Fatalf("the copy that answered last: %+v %v", l, ok)
	}
	got, err = s.Conversations.PruneSuperseded(c, store.PruneCopies{Before: at(10 * time.Second), Now: at(10 * time.Second), Limit: 100})
	must(t, err)
	if !slices.Equal(got, []string{"sess-b-back"}) {
		t.Fatalf("pruned %v, want b's copy of back", got)
	}
	for _, k := range [][2]string{{"a", "back"}, {"a", "alone"}, {"a", "leased"}, {"b", "leased"}, {"a", "recent"}, {"b", "recent"}} {
		if _, ok, err := s.Conversations.Load(c, k[0], k[1]); err != nil || !ok {
			t.Fatalf("%s's copy of %s was pruned: %v", k[0], k[1], err)
		}
	}
	// Once the lease has expired, the held copy goes too, unless a live
	// process holds its session.
	live := func(id string) bool { return id == "sess-a-leased" }
	got, err = s.Conversations.PruneSuperseded(c, store.PruneCopies{Before: at(10 * time.Second), Now: at(30 * time.Second), Limit: 100, Keep: live})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("pruned a live process's copy: %v", got)
	}
	got, err = s.Conversations.PruneSuperseded(c, store.PruneCopies{Before: at(10 * time.Second), Now: at(30 * time.Second), Limit: 100})
	must(t, err)
	if !slices.Equal(got, []string{"sess-a-leased"}) {
		t.Fatalf("after the lease expired: pruned %v", got)
	}
}
