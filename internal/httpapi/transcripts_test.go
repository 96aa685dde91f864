package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/meridian-gw/meridian/internal/testkit"
	"github.com/meridian-gw/meridian/internal/transcripts"
)

// cleaner is the stack's transcript clean-up with no grace period.
func cleaner(s *stack) *transcripts.Cleaner {
	return &transcripts.Cleaner{
		Dirs: func() []string {
			return transcripts.ProjectDirs(transcripts.ConfigDir(s.env), filepath.Join(s.DataDir, "workspace"))
		},
		InUse: s.Gateway.TranscriptsInUse, MaxPerPass: 1000, Now: time.Now, Log: slog.New(slog.DiscardHandler),
	}
}

func transcriptCount(t *testing.T, c *transcripts.Cleaner) int {
	t.Helper()
	n := 0
	for _, dir := range c.Dirs() {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		n += len(files)
	}
	return n
}

// Every resume forks a transcript: 24 turns that each resume (no live
// processes) leave about as many; a clean-up pass leaves one per
// conversation, the one its next turn resumes, and that turn still works.
func TestTranscriptsOfResumedTurnsAreCleanedUp(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true, noLive: true, maxConcurrent: 4})
	s.Upstream.Respond(func(r testkit.Request) testkit.Reply {
		return testkit.Reply{Text: fmt.Sprintf("answer %d", len(r.AllText()))}
	})
	const conversations, turns = 3, 8
	histories := make([][]sdk.MessageParam, conversations)
	var wg sync.WaitGroup
	for c := range conversations {
		wg.Go(func() {
			client := s.client(option.WithHeader("X-Claude-Code-Session-Id", fmt.Sprintf("resumed-%d", c)))
			for turn := range turns {
				histories[c] = append(histories[c], userMessage(fmt.Sprintf("conversation %d turn %d", c, turn)))
				msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: histories[c]})
				if err != nil {
					t.Errorf("conversation %d turn %d: %v", c, turn, err)
					return
				}
				histories[c] = append(histories[c], msg.ToParam())
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	cl := cleaner(s)
	before := transcriptCount(t, cl)
	deleted, err := cl.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := transcriptCount(t, cl)
	t.Logf("%d turns left %d transcripts; the pass deleted %d, leaving %d", conversations*turns, before, deleted, after)
	if before < conversations*turns/2 || after != conversations {
		t.Fatalf("%d transcripts before the pass, %d after; want one per conversation after", before, after)
	}
	// Each conversation goes on from the transcript that was kept.
	client := s.client(option.WithHeader("X-Claude-Code-Session-Id", "resumed-0"))
	histories[0] = append(histories[0], userMessage("one more"))
	if _, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: histories[0]}); err != nil {
		t.Fatal(err)
	}
	if all := s.Upstream.Requests()[len(s.Upstream.Requests())-1].AllText(); !strings.Contains(all, "conversation 0 turn 0") {
		t.Fatal("the turn after the clean-up lost the history")
	}
}

// The transcripts a live conversation holds survive a pass; one that a
// conversation forked away from (its history was edited) does not.
func TestLiveTranscriptSurvivesTheCleanUp(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{sessions: true})
	s.Upstream.Always(testkit.Reply{Text: "ok"})
	if _, err := s.client(option.WithHeader("X-Claude-Code-Session-Id", "held")).Messages.New(context.Background(), simpleParams("keep me")); err != nil {
		t.Fatal(err)
	}
	edited := s.client(option.WithHeader("X-Claude-Code-Session-Id", "edited"))
	first, err := edited.Messages.New(context.Background(), simpleParams("first question"))
	if err != nil {
		t.Fatal(err)
	}
	history := []sdk.MessageParam{userMessage("first question"), first.ToParam(), userMessage("second question")}
	if _, err := edited.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history}); err != nil {
		t.Fatal(err)
	}
	// The user edits the second question: the conversation forks at the
	// first answer, into a new session.
	history = append(history[:2], userMessage("second question, edited"))
	if _, err := edited.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 100, Messages: history}); err != nil {
		t.Fatal(err)
	}
	cl := cleaner(s)
	inUse, err := s.Gateway.TranscriptsInUse(context.Background())
	if err != nil || len(inUse) != 2 {
		t.Fatalf("in use: %v %v", inUse, err)
	}
	before := transcriptCount(t, cl)
	if n, err := cl.Pass(context.Background()); err != nil || n != before-2 || transcriptCount(t, cl) != 2 {
		t.Fatalf("%d transcripts; the pass deleted %d (%v), left %d", before, n, err, transcriptCount(t, cl))
	}
	for id := range inUse {
		if _, err := os.Stat(filepath.Join(cl.Dirs()[0], id+".jsonl")); err != nil {
			t.Fatalf("a live conversation's transcript: %v", err)
		}
	}
}
