package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// A stream that fails after its message began closes that message as
// incomplete, in its done event and in the failed response: it never
// completed. The stall timeout also bounds the wait for the first event,
// which a cold CLI on a loaded machine can take seconds to send, so it is
// kept well above that.
func TestFailedResponseStreamLeavesItsMessageIncomplete(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, stallTimeout: testkit.Scale(8 * time.Second)})
	s.Upstream.Always(testkit.Reply{Text: "a partial answer that stops", ChunkSize: 5, StallAfter: 4})
	st := s.chatClient().Responses.NewStreaming(context.Background(), respParams("start and stall"))
	var doneItem string
	var final responses.Response
	for st.Next() {
		ev := st.Current()
		switch ev.Type {
		case "response.output_item.done":
			doneItem = ev.Item.RawJSON()
		case "response.failed":
			final = ev.Response
		}
	}
	if final.Status != "failed" || len(final.Output) == 0 {
		t.Fatalf("the stream did not fail with its partial output: %s (%v)", final.RawJSON(), st.Err())
	}
	if !strings.Contains(doneItem, `"status":"incomplete"`) {
		t.Fatalf("the cut message's done event: %s", doneItem)
	}
	if got := final.Output[0].RawJSON(); !strings.Contains(got, `"status":"incomplete"`) || !strings.Contains(got, "a par") {
		t.Fatalf("the failed response holds %s", got)
	}
}

// A streamed response is recorded finished before its last event goes
// out: a client that continues it the moment it reads response.completed
// finds it finished, even when recording the end is slow (here a trigger
// makes the store's write take its time, well within a store call's
// deadline).
func TestStreamedResponseIsStoredBeforeItsEnd(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "first answer"})
	c := s.chatClient()
	db := storeDB(t, s)
	for _, q := range []string{
		`CREATE TABLE burn (x INTEGER)`,
		`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 500) INSERT INTO burn SELECT x FROM n`,
		`CREATE TRIGGER slow_end AFTER UPDATE ON responses WHEN NEW.status = 'completed' BEGIN SELECT count(*) FROM burn a, burn b; END`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st := c.Responses.NewStreaming(context.Background(), respParams("first"))
	var id string
	for st.Next() {
		if ev := st.Current(); ev.Type == "response.completed" {
			id = ev.Response.ID
			break
		}
	}
	_ = st.Close()
	if id == "" {
		t.Fatalf("no response.completed (%v)", st.Err())
	}
	p := respParams("second")
	p.PreviousResponseID = openai.String(id)
	got, err := c.Responses.New(context.Background(), p)
	if err != nil || got.Status != "completed" {
		t.Fatalf("continuing %s at once: %v", id, err)
	}
}

// A background response cut short by shutdown fails with a wait, so its
// client knows when to send it again.
func TestBackgroundResponseCutByShutdownCarriesAWait(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, drainTimeout: 100 * time.Millisecond})
	s.Upstream.Always(testkit.Reply{Text: "never finishes", Hang: true})
	p := respParams("take forever")
	p.Background = openai.Bool(true)
	got, err := s.chatClient().Responses.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(s.Upstream.Requests()) == 1 })
	s.stop()
	var status string
	var body []byte
	if err := storeDB(t, s).QueryRow(`SELECT status, response FROM responses WHERE id = ?`, got.ID).Scan(&status, &body); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Error struct {
			Message    string `json:"message"`
			RetryAfter int    `json:"retry_after"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &resp)
	if status != "failed" || resp.Error.RetryAfter <= 0 || !strings.Contains(resp.Error.Message, "shut down") {
		t.Fatalf("the cut response: %s %s", status, body)
	}
}
