package gateway

import (
	"context"
	"time"

	"github.com/meridian-gw/meridian/internal/session"
)

// SessionInfo is what GET /v1/sessions shows of a conversation: its
// mapping, how its turns were classified, and whether a live process holds
// it. It carries no message content.
type SessionInfo struct {
	Profile        string         `json:"profile"`
	Key            string         `json:"key"`
	Client         string         `json:"client"`
	SessionID      string         `json:"claude_session_id"`
	Messages       int            `json:"messages"`
	Model          string         `json:"model"`
	Cwd            string         `json:"cwd"`
	ClientCwd      string         `json:"client_cwd,omitempty"`
	Version        int64          `json:"version"`
	Verdicts       session.Counts `json:"verdicts"`
	Live           bool           `json:"live"`
	Busy           bool           `json:"busy"`
	LastInputBytes int            `json:"last_input_bytes"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
}

// Sessions lists the profile's most recently used conversations.
func (g *Gateway) Sessions(ctx context.Context, limit int) ([]SessionInfo, error) {
	if g.cfg.Sessions == nil {
		return nil, nil
	}
	ms, err := g.cfg.Sessions.List(ctx, g.cfg.Profile, limit)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, len(ms))
	for i, m := range ms {
		out[i] = g.info(m)
	}
	return out, nil
}

// Session shows one conversation; ok is false when it is unknown.
func (g *Gateway) Session(ctx context.Context, key string) (info SessionInfo, ok bool, err error) {
	if g.cfg.Sessions == nil {
		return SessionInfo{}, false, nil
	}
	m, err := g.cfg.Sessions.Load(ctx, g.cfg.Profile, key)
	if err != nil || m.Version == 0 {
		return SessionInfo{}, false, err
	}
	return g.info(m), true, nil
}

func (g *Gateway) info(m session.Mapping) SessionInfo {
	live, busy := g.pool.Holds(m.Key)
	return SessionInfo{
		Profile: g.cfg.Profile, Key: m.Key, Client: m.Client, SessionID: m.SessionID, Messages: len(m.State.Messages), Model: m.Model,
		Cwd: m.Cwd, ClientCwd: m.ClientCwd, Version: m.Version, Verdicts: m.Counts, Live: live, Busy: busy,
		LastInputBytes: m.LastInputBytes, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
	}
}

// LiveProcesses reports live claude processes in all and idle.
func (g *Gateway) LiveProcesses() (live, idle int) { return g.pool.Stats() }

// LiveSessionIDs lists the CLI sessions this gateway's live processes
// hold.
func (g *Gateway) LiveSessionIDs() []string { return g.pool.SessionIDs() }

// TranscriptsInUse lists the backend sessions whose transcripts are still
// needed: those stored conversations continue from, and those of live
// processes (idle or running a turn).
func (g *Gateway) TranscriptsInUse(ctx context.Context) (map[string]bool, error) {
	used := map[string]bool{}
	for _, id := range g.LiveSessionIDs() {
		used[id] = true
	}
	if g.cfg.Sessions != nil {
		ids, err := g.cfg.Sessions.SessionIDs(ctx)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			used[id] = true
		}
	}
	return used, nil
}
