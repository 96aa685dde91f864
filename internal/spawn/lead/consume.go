package lead

import (
	"context"
	"errors"
	"fmt"

	"github.com/meridian-gw/meridian/internal/spawn"
	"github.com/meridian-gw/meridian/internal/spawn/registry"
)

// How a result came to be consumed, as the registry records it.
const (
	byAck     = "ack"
	byClear   = "clear"
	byReceipt = "receipt"
)

// consume records that the caller saw children's terminal results, if the
// caller may consume: it is their lead, it observes, it is not -C.
func (l *Lead) consume(ctx context.Context, how string, observe bool, rows ...registry.Row) error {
	if l.ReadOnly || !observe {
		return nil
	}
	var ids []string
	for _, r := range rows {
		if r.ParentID == l.ID && r.Status.Terminal() {
			ids = append(ids, r.ID)
		}
	}
	return l.Registry.Consume(ctx, l.Project, l.ID, how, ids...)
}

// Ack records that the caller has seen spawns' results. It is idempotent;
// -C may not ack, as consumption belongs to the caller's own identity. A
// receipt names the client's delivery the ack confirms (Pi's extension
// acks when Pi admits the message): it is recorded as a receipt.
func (l *Lead) Ack(ctx context.Context, ids []string, receipt string) error {
	if l.ReadOnly {
		return errors.New("ack records what this caller has seen and cannot be run with -C")
	}
	if len(ids) == 0 {
		return errors.New("ack needs at least one spawn id")
	}
	how := byAck
	if receipt != "" {
		if !validReceipt(receipt) {
			return fmt.Errorf("receipt %q: a delivery id is letters, digits, '-' and '_', at most 64", receipt)
		}
		how = byReceipt
	}
	for _, id := range ids {
		if _, err := spawn.ParseID(id); err != nil {
			return err
		}
		if _, err := l.Registry.Get(ctx, l.Project, id); err != nil {
			return err
		}
	}
	if receipt != "" {
		l.log().Info("delivery receipt", "delivery", receipt, "spawns", ids)
	}
	return l.Registry.Consume(ctx, l.Project, l.ID, how, ids...)
}

func validReceipt(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Clear dismisses finished children's results unread: they are consumed
// and never delivered. With no ids it clears every child owed now. Only
// the caller's own finished children can be cleared; -C may not clear.
func (l *Lead) Clear(ctx context.Context, ids []string) ([]string, error) {
	if l.ReadOnly {
		return nil, errors.New("clear records what this caller dismissed and cannot be run with -C")
	}
	if len(ids) == 0 {
		owed, _, _, err := l.owed(ctx)
		if err != nil {
			return nil, err
		}
		ids = make([]string, len(owed))
		for i, s := range owed {
			ids[i] = s.ID
		}
	} else {
		for _, id := range ids {
			if _, err := spawn.ParseID(id); err != nil {
				return nil, err
			}
			row, err := l.Registry.Get(ctx, l.Project, id)
			if err != nil {
				return nil, err
			}
			if row.ParentID != l.ID {
				return nil, fmt.Errorf("%s is not a child of this caller: only a spawn's own lead clears it", id)
			}
			if !row.Status.Terminal() {
				return nil, fmt.Errorf("%s is still %s: cancel it (spawn cancel %s), or clear it once it has finished", id, row.Status, id)
			}
		}
	}
	return ids, l.Registry.Consume(ctx, l.Project, l.ID, byClear, ids...)
}

// Seen returns how the caller consumed each of its children's results
// that it has consumed.
func (l *Lead) Seen(ctx context.Context) (map[string]string, error) {
	return l.Registry.ConsumedHow(ctx, l.Project, l.ID)
}
