package serve

import (
	"context"
	"log/slog"
	"time"

	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/transcripts"
)

// transcriptCleaner deletes the CLI transcripts nothing needs; with
// --profile-copy-grace it first prunes superseded profile copies.
func transcriptCleaner(cfg Config, profiles *servedProfiles, conversations store.Conversations, workspace string, log *slog.Logger) *transcripts.Cleaner {
	c := &transcripts.Cleaner{
		Dirs:  profiles.transcriptDirs(workspace),
		InUse: profiles.transcriptsInUse, Grace: cfg.TranscriptGrace, MaxPerPass: transcripts.DefaultMaxPerPass,
		Now: time.Now, Log: log.With("component", "transcripts"),
	}
	if cfg.ProfileCopyGrace > 0 {
		c.Unpin = profileCopies{conversations: conversations, grace: cfg.ProfileCopyGrace,
			live: profiles.liveSessions, now: time.Now}.prune
	}
	return c
}

// maxCopiesPerPass bounds one pass of copy pruning, so a large backlog is
// worked off over several passes rather than in one long transaction.
const maxCopiesPerPass = 1000

// profileCopies prunes what a conversation left under a profile it moved
// away from (by failover or by headroom): once another profile has
// answered it and the old copy has been unused for grace, the copy's
// mapping goes, and with it the pin on its CLI transcript. A conversation
// that comes back to that profile then replays its history into a fresh
// session instead of resuming the old one. Off (grace 0) by default: the
// copy keeps a resume possible, which a replay cannot fully match.
type profileCopies struct {
	conversations store.Conversations
	grace         time.Duration
	live          func() []string // sessions of this host's live processes
	now           func() time.Time
}

func (p profileCopies) prune(ctx context.Context) (int, error) {
	live := map[string]bool{}
	for _, id := range p.live() {
		live[id] = true
	}
	now := p.now()
	gone, err := p.conversations.PruneSuperseded(ctx, store.PruneCopies{
		Before: now.Add(-p.grace), Now: now, Limit: maxCopiesPerPass,
		Keep: func(id string) bool { return live[id] },
	})
	return len(gone), err
}

// liveSessions lists the sessions of every profile's live processes.
func (s *servedProfiles) liveSessions() []string {
	var out []string
	for _, gw := range s.gateways() {
		out = append(out, gw.LiveSessionIDs()...)
	}
	return out
}
