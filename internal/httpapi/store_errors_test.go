package httpapi_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// storeDB opens the stack's database beside it, as another process would.
func storeDB(t *testing.T, s *stack) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(s.DataDir, "meridian.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// storeErrorSaysNothingOfTheStore fails when a client-facing message
// carries the database's own words or where it lives.
func storeErrorSaysNothingOfTheStore(t *testing.T, s *stack, msg string) {
	t.Helper()
	for _, leak := range []string{"sqlite", "SQL", "no such table", "disk is full", "locked", s.DataDir, "meridian.db"} {
		if strings.Contains(msg, leak) {
			t.Fatalf("the error names %q: %s", leak, msg)
		}
	}
}

// A store that cannot be read answers 503 with a wait, in each API's own
// shape, and never in the database's words.
func TestUnreadableStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "answer"})
	db := storeDB(t, s)
	if _, err := db.Exec(`ALTER TABLE conversations RENAME TO conversations_away`); err != nil {
		t.Fatal(err)
	}
	_, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "unreadable")).Messages.New(context.Background(), simpleParams("hello"))
	ae := apiError(t, err)
	if ae.StatusCode != http.StatusServiceUnavailable || ae.Response.Header.Get("Retry-After") == "" || !strings.Contains(ae.RawJSON(), `"api_error"`) {
		t.Fatalf("Messages with an unreadable store: %d Retry-After=%q %s", ae.StatusCode, ae.Response.Header.Get("Retry-After"), ae.RawJSON())
	}
	storeErrorSaysNothingOfTheStore(t, s, ae.RawJSON())
	_, err = s.chatClient().Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "test-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
		User: openai.String("unreadable-user"),
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusServiceUnavailable || oe.Response.Header.Get("Retry-After") == "" || !strings.Contains(oe.RawJSON(), `"message"`) {
		t.Fatalf("chat completions with an unreadable store: %v", err)
	}
	storeErrorSaysNothingOfTheStore(t, s, oe.RawJSON())
	if len(s.Upstream.Requests()) != 0 {
		t.Fatal("a turn ran upstream though its conversation could not be loaded")
	}
}

// A store another process holds past the busy timeout answers 503 with a
// wait too, rather than SQLite's "database is locked" as a 500.
func TestBusyStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "answer"})
	db := storeDB(t, s)
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.Exec(`INSERT INTO turn_leases (profile, key, token, host, incarnation, expires_at) VALUES ('x', 'x', 'x', 'x', 'x', 0)`); err != nil {
		t.Fatal(err) // holds the write lock until the end of the test
	}
	_, err = s.client(option.WithHeader("X-Claude-Code-Session-Id", "busy")).Messages.New(context.Background(), simpleParams("hello"))
	ae := apiError(t, err)
	if ae.StatusCode != http.StatusServiceUnavailable || ae.Response.Header.Get("Retry-After") == "" {
		t.Fatalf("Messages with a store held elsewhere: %d %s", ae.StatusCode, ae.RawJSON())
	}
	storeErrorSaysNothingOfTheStore(t, s, ae.RawJSON())
}

// A turn whose state cannot be saved (the disk is full, here a trigger
// that says so) is still answered, and says so: a header on a JSON
// answer, a trailer on a stream. Its conversation goes on from what was
// saved, by replaying.
func TestUnsavedTurnSaysSo(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	answerLastQuestion(s.Upstream)
	db := storeDB(t, s)
	if _, err := db.Exec(`CREATE TRIGGER full BEFORE INSERT ON conversations BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	c := newConversation(t, s, "X-Claude-Code-Session-Id", "unsaved")
	var resp *http.Response
	c.history = append(c.history, userMessage("q1"))
	msg, err := c.client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: c.history},
		option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("X-Meridian-Unsaved"); got == "" {
		t.Fatal("a JSON answer whose state was not saved does not say so")
	} else {
		storeErrorSaysNothingOfTheStore(t, s, got)
	}
	c.history = append(c.history, msg.ToParam())

	// A stream says it in a trailer, read after its last event.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(
		`{"model":"test-model","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"q1"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Claude-Code-Session-Id", "unsaved-stream")
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if !strings.Contains(string(body), "message_stop") || sresp.Trailer.Get("X-Meridian-Unsaved") == "" {
		t.Fatalf("a stream whose state was not saved: trailer %v\n%s", sresp.Trailer, body)
	}

	// With the disk free again the conversation goes on: nothing was
	// saved, so the whole history reaches the CLI.
	if _, err := db.Exec(`DROP TRIGGER full`); err != nil {
		t.Fatal(err)
	}
	if got := c.ask("q2"); !strings.Contains(got.Content[0].Text, "answer to q2") {
		t.Fatalf("the next turn: %+v", got.Content)
	}
	if all := s.Upstream.Requests(); !strings.Contains(all[len(all)-1].AllText(), "q1") {
		t.Fatal("the next turn did not carry the unsaved history")
	}
}
