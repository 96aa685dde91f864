package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/lineage"
	"github.com/meridian-gw/meridian/internal/session"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/store/sqlite"
	"github.com/meridian-gw/meridian/internal/store/sqlstore"
)

// scripted is a backend whose sessions answer every turn with one text
// block and a pin of their own, and write down what they were started
// with and sent. hook, when set, runs inside each turn.
type scripted struct {
	mu      sync.Mutex
	starts  []backend.StartOptions
	turns   []string // what each turn was sent, in order
	n       int
	refuse  bool // a resumed session fails as the CLI does for one it lacks
	hook    func(ctx context.Context, turn int) error
	session []*scriptedSession
}

func (b *scripted) Start(_ context.Context, o backend.StartOptions) (backend.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts = append(b.starts, o)
	id := o.Resume
	if id == "" {
		id = fmt.Sprint("session-", len(b.starts))
	}
	s := &scriptedSession{b: b, id: id, resumed: o.Resume != ""}
	b.session = append(b.session, s)
	return s, nil
}

type scriptedSession struct {
	b       *scripted
	id      string
	resumed bool
	mu      sync.Mutex
	closed  bool
}

func (s *scriptedSession) Turn(ctx context.Context, in backend.Input, emit func(*backend.Event) error) (*backend.Result, error) {
	b := s.b
	var sent []string
	for _, c := range in.Content {
		sent = append(sent, string(c))
	}
	b.mu.Lock()
	b.n++
	n, refuse, hook := b.n, b.refuse && s.resumed, b.hook
	b.turns = append(b.turns, strings.Join(sent, " "))
	b.mu.Unlock()
	if refuse {
		return &backend.Result{SessionID: s.id, Failure: &backend.Failure{Kind: backend.FailBackend, Message: "No conversation found with session ID: " + s.id}}, nil
	}
	if hook != nil {
		if err := hook(ctx, n); err != nil {
			return nil, err
		}
	}
	for _, ev := range []*backend.Event{start(0, "text"), text(0, fmt.Sprint("answer ", n)), stop(0)} {
		if err := emit(ev); err != nil {
			return nil, err
		}
	}
	return &backend.Result{SessionID: s.id, StopReason: "end_turn", Pin: fmt.Sprint("pin-", n)}, nil
}

func (s *scriptedSession) Answer(backend.ToolResult) error { return nil }
func (s *scriptedSession) ID() string                      { return s.id }
func (s *scriptedSession) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
func (s *scriptedSession) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed
}

// rig is a gateway over a scripted backend and a real store.
type rig struct {
	g     *Gateway
	b     *scripted
	db    *sql.DB
	st    *session.Store
	reads *countingRows
}

func newRig(t *testing.T, leaseTTL time.Duration) *rig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st := sqlite.NewStore(db, path, sqlstore.Options{})
	t.Cleanup(func() { _ = st.Close() })
	owners := cluster.New(cluster.Config{Hosts: st.Hosts, Host: "test-host"})
	if err := owners.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owners.Close)
	b := &scripted{}
	reads := &countingRows{Conversations: st.Conversations}
	sessions := session.NewStore(reads, nil)
	g := New(Config{Backend: b, Sessions: sessions, Leases: session.NewLeases(st.Leases, owners, leaseTTL, nil),
		Workspace: t.TempDir(), TurnWait: time.Second})
	t.Cleanup(g.Close)
	return &rig{g: g, b: b, db: db, st: sessions, reads: reads}
}

// countingRows counts the reads of conversation rows.
type countingRows struct {
	store.Conversations
	n atomic.Int32
}

func (c *countingRows) Load(ctx context.Context, profile, key string) (store.Conversation, bool, error) {
	c.n.Add(1)
	return c.Conversations.Load(ctx, profile, key)
}

func (c *countingRows) Latest(ctx context.Context, key string) (store.Conversation, bool, error) {
	c.n.Add(1)
	return c.Conversations.Latest(ctx, key)
}

func user(s string) anthropic.Message {
	return anthropic.Message{Role: anthropic.RoleUser, Content: []anthropic.ContentBlock{{Type: anthropic.BlockText, Text: s}}}
}

func assistant(s string) anthropic.Message {
	return anthropic.Message{Role: anthropic.RoleAssistant, Content: []anthropic.ContentBlock{{Type: anthropic.BlockText, Text: s}}}
}

// ask sends one turn of conversation "c" and returns what the output got.
func (r *rig) ask(t *testing.T, msgs ...anthropic.Message) ([]string, error) {
	t.Helper()
	out := &record{}
	err := r.g.Messages(context.Background(), request(msgs...), "msg_1", out)
	return out.calls, err
}

func request(msgs ...anthropic.Message) Request {
	h := http.Header{}
	h.Set("X-Claude-Code-Session-Id", "c")
	return Request{Body: &anthropic.MessagesRequest{Model: "claude-test", MaxTokens: 100, Messages: msgs}, Header: h}
}

// A routed request reads its conversation's row once for every step
// before its turn (the profile that served it, the host that holds it,
// the turn's lineage), and not again under the lease unless another turn
// published while it waited.
func TestARoutedRequestReadsItsRowOnceBeforeItsTurn(t *testing.T) {
	r := newRig(t, 0)
	if _, err := r.ask(t, user("first question")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		req  Request
		// between runs after the routing reads, before the turn.
		between func()
		want    int32
	}{
		{name: "named once", req: request(user("first question"), assistant("answer 1"), user("second question")).Identified(), want: 1},
		// Without Identified each step reads for itself, as before.
		{name: "not named", req: request(user("first question"), assistant("answer 1"), user("second question"), assistant("answer 2"), user("third")), want: 3},
		{name: "moved on after it was read", req: request(user("first question"), assistant("answer 1"), user("second question"),
			assistant("answer 2"), user("third"), assistant("answer 3"), user("fourth")).Identified(),
			between: func() {
				if _, err := r.ask(t, user("first question, edited")); err != nil {
					t.Fatal(err)
				}
			}, want: 2},
	} {
		reads := func(f func()) int32 {
			before := r.reads.n.Load()
			f()
			return r.reads.n.Load() - before
		}
		n := reads(func() {
			if p, err := r.g.ServedBy(ctx, c.req); err != nil || p != DefaultProfile {
				t.Fatalf("%s: served by %q (%v)", c.name, p, err)
			}
			if h, err := r.g.HeldBy(ctx, c.req); err != nil || h != r.st.Self() {
				t.Fatalf("%s: held by %v (%v)", c.name, h, err)
			}
		})
		if c.between != nil {
			c.between()
		}
		published, err := r.st.Load(ctx, DefaultProfile, "c")
		if err != nil {
			t.Fatal(err)
		}
		n += reads(func() {
			if err := r.g.Messages(ctx, c.req, "msg_2", &record{}); err != nil {
				t.Fatal(err)
			}
		})
		if n != c.want {
			t.Fatalf("%s: %d reads of the conversation's row, want %d", c.name, n, c.want)
		}
		// The turn published over the row as it stood, not as first read.
		if now, err := r.st.Load(ctx, DefaultProfile, "c"); err != nil || now.Version != published.Version+1 {
			t.Fatalf("%s: version %d after the turn, %d before (%v)", c.name, now.Version, published.Version, err)
		}
	}
}

// A conversation's second turn goes where its first left the session:
// the live process when it stands there, a resumed one when it closed, a
// replay of the history when the client changed it or the CLI no longer
// has the session. Each sends only what the session lacks.
func TestWhereASecondTurnRuns(t *testing.T) {
	second := []anthropic.Message{user("first question"), assistant("answer 1"), user("second question")}
	for _, c := range []struct {
		name    string
		between func(*rig)
		msgs    []anthropic.Message
		// starts are the processes started in all, resumes the sessions
		// they resumed ("" for a fresh one), sent what the second turn's
		// first attempt was sent, containing (or not) the first question.
		starts  int
		resumes []string
		history bool
	}{
		{name: "live process", msgs: second, starts: 1, resumes: []string{""}},
		{name: "resumed after its process closed", between: func(r *rig) { r.b.session[0].Close() },
			msgs: second, starts: 2, resumes: []string{"", "session-1"}},
		{name: "replayed after the client edited its history",
			msgs:   []anthropic.Message{user("first question, edited"), assistant("answer 1"), user("second question")},
			starts: 2, resumes: []string{"", ""}, history: true},
		{name: "replayed when the CLI lost the session", between: func(r *rig) { r.b.session[0].Close(); r.b.refuse = true },
			msgs: second, starts: 3, resumes: []string{"", "session-1", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 0)
			if _, err := r.ask(t, user("first question")); err != nil {
				t.Fatal(err)
			}
			if c.between != nil {
				c.between(r)
			}
			calls, err := r.ask(t, c.msgs...)
			if err != nil {
				t.Fatal(err)
			}
			if last := calls[len(calls)-1]; !strings.HasPrefix(last, "finish end_turn") {
				t.Fatalf("the second turn ended %q", last)
			}
			var resumes []string
			for _, o := range r.b.starts {
				resumes = append(resumes, o.Resume)
			}
			if len(r.b.starts) != c.starts || strings.Join(resumes, ",") != strings.Join(c.resumes, ",") {
				t.Fatalf("processes started resuming %q, want %q", resumes, c.resumes)
			}
			sent := r.b.turns[1]
			if got := strings.Contains(sent, "first question"); got != c.history {
				t.Fatalf("the second turn was sent %s; its history in it: %v, want %v", sent, got, c.history)
			}
			if !strings.Contains(sent, "second question") {
				t.Fatalf("the second turn was sent %s, without its question", sent)
			}
			if c.name == "replayed when the CLI lost the session" && !strings.Contains(r.b.turns[2], "first question") {
				t.Fatalf("the replay was sent %s, without the history", r.b.turns[2])
			}
			m, err := r.st.Load(context.Background(), DefaultProfile, r.key(t))
			if err != nil || m.Version != 2 {
				t.Fatalf("the conversation stands at version %d (%v), want 2", m.Version, err)
			}
		})
	}
}

// key is conversation "c"'s key in the store.
func (r *rig) key(t *testing.T) string {
	t.Helper()
	var key string
	if err := r.db.QueryRow(`SELECT key FROM conversations`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	return key
}

// A turn whose conversation another writer moved on while it ran is
// answered but not published, and its process is closed: the next turn
// cannot continue on a process the store does not know.
func TestATurnOvertakenIsNotKept(t *testing.T) {
	r := newRig(t, 0)
	if _, err := r.ask(t, user("first question")); err != nil {
		t.Fatal(err)
	}
	key := r.key(t)
	r.b.hook = func(ctx context.Context, _ int) error {
		m, err := r.st.Load(ctx, DefaultProfile, key)
		if err != nil {
			return err
		}
		next := m
		next.State = lineage.Append(m.State, lineage.MessageDigest(assistant("elsewhere")), "pin-elsewhere", nil)
		_, err = r.st.Publish(ctx, next, m.Version, lineage.Continuation, session.Turn{})
		return err
	}
	calls, err := r.ask(t, user("first question"), assistant("answer 1"), user("second question"))
	if err != nil {
		t.Fatal(err)
	}
	if last := calls[len(calls)-1]; !strings.HasPrefix(last, "finish end_turn") {
		t.Fatalf("the overtaken turn ended %q", last)
	}
	if r.b.session[0].Alive() {
		t.Fatal("the overtaken turn's process was kept")
	}
	if live, _ := r.g.pool.Holds(key); live {
		t.Fatal("the pool still holds a process for the conversation")
	}
}

// A turn whose lease another holder took stops and tells the client to
// send it again; it publishes nothing and its process closes.
func TestATurnThatLostItsLeaseStops(t *testing.T) {
	r := newRig(t, 300*time.Millisecond)
	if _, err := r.ask(t, user("first question")); err != nil {
		t.Fatal(err)
	}
	key := r.key(t)
	r.b.hook = func(ctx context.Context, _ int) error {
		if _, err := r.db.ExecContext(ctx, `UPDATE turn_leases SET token = 'theirs'`); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	_, err := r.ask(t, user("first question"), assistant("answer 1"), user("second question"))
	var ge *Error
	if !errors.As(err, &ge) || ge.Status != http.StatusConflict || !strings.Contains(ge.Message, "another turn took over") {
		t.Fatalf("a turn that lost its lease ended with %v, want a 409 saying another turn took over", err)
	}
	if r.b.session[0].Alive() {
		t.Fatal("the process of a turn that lost its lease was kept")
	}
	m, err := r.st.Load(context.Background(), DefaultProfile, key)
	if err != nil || m.Version != 1 {
		t.Fatalf("the conversation stands at version %d (%v), want 1: nothing published", m.Version, err)
	}
}
