package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/meridian-gw/meridian/internal/store"
)

type conversations struct{ s *DB }

const conversationColumns = `profile, key, client, cli_session_id, digests, pins, tail, tail_slot, message_count, cwd, client_cwd, model,
	version, continuations, compactions, undos, divergences, last_input_bytes, created_at, updated_at, holder_host, holder_incarnation`

type scanner interface{ Scan(dest ...any) error }

func scanConversation(row scanner) (store.Conversation, error) {
	var c store.Conversation
	var created, updated int64
	err := row.Scan(&c.Profile, &c.Key, &c.Client, &c.SessionID, &c.Digests, &c.Pins, &c.Tail, &c.Slot, &c.Messages,
		&c.Cwd, &c.ClientCwd, &c.Model, &c.Version, &c.Continuations, &c.Compactions, &c.Undos, &c.Divergences,
		&c.LastInputBytes, &created, &updated, &c.Holder.Host, &c.Holder.Incarnation)
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return c, err
}

func (c conversations) Load(ctx context.Context, profile, key string) (store.Conversation, bool, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	conv, err := scanConversation(c.s.queryRow(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE profile = ? AND key = ?`, profile, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Conversation{Profile: profile, Key: key}, false, nil
	}
	if err != nil {
		return store.Conversation{}, false, wrap("load conversation", err)
	}
	return conv, true, nil
}

func (c conversations) Latest(ctx context.Context, key string) (store.Conversation, bool, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	conv, err := scanConversation(c.s.queryRow(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE key = ? ORDER BY updated_at DESC LIMIT 1`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Conversation{Key: key}, false, nil
	}
	if err != nil {
		return store.Conversation{}, false, wrap("load a conversation's latest profile", err)
	}
	return conv, true, nil
}

func (c conversations) List(ctx context.Context, profile string, limit int) ([]store.Conversation, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	rows, err := c.s.query(ctx, `SELECT `+conversationColumns+` FROM conversations WHERE profile = ? ORDER BY updated_at DESC LIMIT ?`, profile, limit)
	if err != nil {
		return nil, wrap("list conversations", err)
	}
	defer rows.Close()
	var out []store.Conversation
	for rows.Next() {
		conv, err := scanConversation(rows)
		if err != nil {
			return nil, wrap("list conversations", err)
		}
		out = append(out, conv)
	}
	return out, wrap("list conversations", rows.Err())
}

func (c conversations) SessionIDs(ctx context.Context) ([]string, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	rows, err := c.s.query(ctx, `SELECT cli_session_id FROM conversations`)
	if err != nil {
		return nil, wrap("list sessions", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("list sessions", err)
		}
		out = append(out, id)
	}
	return out, wrap("list sessions", rows.Err())
}

// Publish writes the mapping, the fence check and the delivered tool
// results in one transaction: a turn's writes cost one round of commits.
func (c conversations) Publish(ctx context.Context, conv store.Conversation, p store.Publish) (int64, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	now := ms(p.Now)
	err := c.s.tx(ctx, 0, func(tx *Tx) error {
		if p.Fence != "" {
			var token string
			err := tx.queryRow(`SELECT token FROM turn_leases WHERE profile = ? AND key = ?{for_update}`, conv.Profile, conv.Key).Scan(&token)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && token != p.Fence) {
				return store.ErrFenced
			}
			if err != nil {
				return err
			}
		}
		var n int64
		var err error
		if p.Prev == 0 {
			n, err = affected(tx.exec(`INSERT INTO conversations (`+conversationColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (profile, key) DO NOTHING`,
				conv.Profile, conv.Key, conv.Client, conv.SessionID, conv.Digests, conv.Pins, conv.Tail, conv.Slot, conv.Messages,
				conv.Cwd, conv.ClientCwd, conv.Model, conv.Continuations, conv.Compactions, conv.Undos, conv.Divergences,
				conv.LastInputBytes, now, now, conv.Holder.Host, conv.Holder.Incarnation))
		} else {
			n, err = affected(tx.exec(`UPDATE conversations SET client = ?, cli_session_id = ?, digests = ?, pins = ?, tail = ?,
				tail_slot = ?, message_count = ?, cwd = ?, client_cwd = ?, model = ?, version = version + 1, continuations = ?,
				compactions = ?, undos = ?, divergences = ?, last_input_bytes = ?, updated_at = ?, holder_host = ?, holder_incarnation = ?
				WHERE profile = ? AND key = ? AND version = ?`,
				conv.Client, conv.SessionID, conv.Digests, conv.Pins, conv.Tail, conv.Slot, conv.Messages, conv.Cwd, conv.ClientCwd,
				conv.Model, conv.Continuations, conv.Compactions, conv.Undos, conv.Divergences, conv.LastInputBytes, now,
				conv.Holder.Host, conv.Holder.Incarnation, conv.Profile, conv.Key, p.Prev))
		}
		switch {
		case err != nil:
			return err
		case n != 1:
			return store.ErrConflict
		}
		for _, id := range p.Consumed {
			if _, err := tx.exec(`INSERT INTO consumed_tool_results (profile, conversation, tool_use_id, consumed_at)
				VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, conv.Profile, conv.Key, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap("publish conversation", err)
	}
	// The bounds are kept after the commit: a failed prune loses nothing
	// the turn wrote.
	if p.Prev == 0 {
		if err := c.prune(ctx, `conversations`, `updated_at`, `profile, key`, c.s.opts.MaxConversations); err != nil {
			return 1, wrap("prune conversations", err)
		}
	}
	if len(p.Consumed) > 0 {
		if err := c.prune(ctx, `consumed_tool_results`, `consumed_at`, `profile, conversation, tool_use_id`, c.s.opts.MaxConsumed); err != nil {
			return p.Prev + 1, wrap("prune delivered tool results", err)
		}
	}
	return p.Prev + 1, nil
}

// PruneSuperseded picks the copies in one statement and deletes them, and
// their delivered tool results, in the same transaction: a turn that
// publishes a copy meanwhile makes it newer than before, and the delete,
// which checks again, leaves it.
func (c conversations) PruneSuperseded(ctx context.Context, p store.PruneCopies) ([]string, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	const superseded = `c.updated_at < ?
		AND EXISTS (SELECT 1 FROM conversations n WHERE n.key = c.key AND n.profile <> c.profile AND n.updated_at > c.updated_at)
		AND NOT EXISTS (SELECT 1 FROM turn_leases l WHERE l.profile = c.profile AND l.key = c.key AND l.expires_at > ?)`
	var sessions []string
	err := c.s.tx(ctx, 0, func(tx *Tx) error {
		sessions = sessions[:0]
		rows, err := tx.query(`SELECT c.profile, c.key, c.cli_session_id FROM conversations c WHERE `+superseded+`
			ORDER BY c.updated_at ASC LIMIT ?`, ms(p.Before), ms(p.Now), p.Limit)
		if err != nil {
			return err
		}
		type copyKey struct{ profile, key string }
		var picked []copyKey
		for rows.Next() {
			var k copyKey
			var session string
			if err := rows.Scan(&k.profile, &k.key, &session); err != nil {
				rows.Close()
				return err
			}
			if p.Keep != nil && p.Keep(session) {
				continue
			}
			picked = append(picked, k)
			sessions = append(sessions, session)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, k := range picked {
			if _, err := tx.exec(`DELETE FROM conversations AS c WHERE c.profile = ? AND c.key = ? AND `+superseded,
				k.profile, k.key, ms(p.Before), ms(p.Now)); err != nil {
				return err
			}
			if _, err := tx.exec(`DELETE FROM consumed_tool_results WHERE profile = ? AND conversation = ?`, k.profile, k.key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("prune superseded conversations", err)
	}
	return sessions, nil
}

// prune deletes a table's oldest rows (by the column at) once it holds
// more than max, down to a twentieth below it, so a table at its bound
// pays for a delete (and its commit) once in many publishes, not at each.
// The row count is read first so a table within its bound costs one
// count.
func (c conversations) prune(ctx context.Context, table, at, key string, max int) error {
	var n int
	if err := c.s.queryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return err
	}
	if n <= max {
		return nil
	}
	_, err := c.s.exec(ctx, `DELETE FROM `+table+` WHERE (`+key+`) IN (
		SELECT `+key+` FROM `+table+` ORDER BY `+at+` ASC LIMIT ?)`, n-max+max/20)
	return err
}

func (c conversations) ShareTranscript(ctx context.Context, profile, key, sessionID string, data []byte) (bool, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	n, err := affected(c.s.exec(ctx, `UPDATE conversations SET transcript = ?, transcript_session = ?
		WHERE profile = ? AND key = ? AND cli_session_id = ?`, data, sessionID, profile, key, sessionID))
	if err != nil {
		return false, wrap("share a transcript", err)
	}
	return n == 1, nil
}

func (c conversations) Transcript(ctx context.Context, profile, key string) (string, []byte, bool, error) {
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	var session string
	var data []byte
	err := c.s.queryRow(ctx, `SELECT transcript_session, transcript FROM conversations WHERE profile = ? AND key = ?`, profile, key).Scan(&session, &data)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (session == "" || len(data) == 0)) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, wrap("read a shared transcript", err)
	}
	return session, data, true, nil
}

func (c conversations) Consumed(ctx context.Context, profile, conversation string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ctx, cancel := c.s.call(ctx)
	defer cancel()
	rows, err := c.s.query(ctx, `SELECT tool_use_id FROM consumed_tool_results WHERE profile = ? AND conversation = ? AND tool_use_id IN (`+in(len(ids))+`)`,
		append([]any{profile, conversation}, anys(ids)...)...)
	if err != nil {
		return nil, wrap("check delivered tool results", err)
	}
	defer rows.Close()
	found := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("check delivered tool results", err)
		}
		found[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("check delivered tool results", err)
	}
	var out []string
	for _, id := range ids {
		if found[id] {
			out = append(out, id)
		}
	}
	return out, nil
}
