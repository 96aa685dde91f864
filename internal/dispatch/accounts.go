package dispatch

import (
	"context"
	"slices"
	"time"

	"github.com/meridian-gw/meridian/internal/headroom"
)

// Accounts is how the profile of a request that names none is chosen.
type Accounts string

// How profiles are chosen.
const (
	// ByHeadroom: a new conversation goes to the profile with the most
	// room left in its plan windows, a running one stays on its profile
	// until that is benched or a window crosses MoveAt, and a refusal for
	// a rate limit moves the request on as Failover does.
	ByHeadroom Accounts = "headroom"
	// ByPriority: a new conversation goes to the default profile, a
	// running one stays on its profile; Failover alone moves requests.
	ByPriority Accounts = "priority"
)

// Route reasons besides those package headroom gives.
const (
	reasonNamed   = "named"   // the client named the profile
	reasonDefault = "default" // priority mode: the default profile
	reasonSticky  = "sticky"
	reasonBenched = "moved: benched" // the profile before refused for its limit
)

// plan is where a call goes: the profiles to try, best first, and why the
// first; failover says whether a refusal for a rate limit moves on to the
// next. With every profile it may use benched, order is empty and reopen
// is when the first reopens; with none it may use, both are zero.
type plan struct {
	order    []Answerer
	reason   string
	failover bool
	reopen   time.Time
}

// plan chooses the profiles c tries.
func (d *Dispatcher) plan(ctx context.Context, set *profileSet, c Call) plan {
	now := d.cfg.Now()
	byHeadroom := d.cfg.Accounts != ByPriority && len(set.list) > 1
	if byHeadroom && c.Named == nil {
		return d.byHeadroom(ctx, set, c, d.shared(ctx), now)
	}
	chosen, reason := d.chooseIn(ctx, set, c)
	if chosen == nil {
		return plan{}
	}
	if !(d.cfg.Failover || byHeadroom) || len(set.list) < 2 {
		return plan{order: []Answerer{chosen}, reason: reason}
	}
	d.shared(ctx)
	names, reopen := d.bench.Order(chosen.Profile(), set.fallbacks, now)
	p := plan{reason: reason, failover: true, reopen: reopen}
	for _, name := range names {
		if gw, ok := set.byName[name]; ok && c.allows(name) {
			p.order = append(p.order, gw)
		}
	}
	if len(p.order) == 0 && reopen.IsZero() {
		p.order = []Answerer{chosen} // none to move to: the choice answers
	}
	if len(p.order) > 0 && p.order[0] != chosen {
		p.reason = reasonBenched // the choice is benched: the next answers
	}
	return p
}

// byHeadroom ranks the profiles c may use by what their plan windows have
// left: the default, those failover may move requests to, and the one that
// served the conversation.
func (d *Dispatcher) byHeadroom(ctx context.Context, set *profileSet, c Call, v *sharedView, now time.Time) plan {
	var cands []Answerer
	add := func(a Answerer) {
		if a != nil && c.allows(a.Profile()) && !slices.Contains(cands, a) {
			cands = append(cands, a)
		}
	}
	add(set.answerer)
	for _, name := range set.fallbacks {
		add(set.byName[name])
	}
	last, err := set.answerer.ServedBy(ctx, c.Request)
	if err != nil {
		d.log.Warn("could not look up the conversation's profile; it is placed as a new one", "err", err)
	}
	add(set.byName[last])
	if len(cands) == 0 {
		return plan{}
	}
	accounts := make([]headroom.Account, len(cands))
	current := -1
	p := plan{failover: true}
	model := ""
	if c.Request.Body != nil {
		model = c.Request.Body.Model
	}
	for i, a := range cands {
		name := a.Profile()
		until := d.bench.Until(name, now)
		windows := d.figures(v, name, a)
		if spent, ok := headroom.Spent(windows, model, now); ok && set.planOnly[name] && spent.ResetsAt.After(until) {
			until = spent.ResetsAt // its plan is spent, and it draws nothing else
		}
		accounts[i] = headroom.Account{Name: name, Windows: windows, Benched: !until.IsZero()}
		if name == last {
			current = i
		}
		if !until.IsZero() && (p.reopen.IsZero() || until.Before(p.reopen)) {
			p.reopen = until
		}
	}
	policy := headroom.Policy{MoveAt: d.cfg.MoveAt}
	var choice headroom.Choice
	if current >= 0 {
		choice = policy.Continue(accounts, current, model, now)
	} else {
		choice = policy.Place(accounts, model, now)
	}
	for _, i := range choice.Order {
		p.order = append(p.order, cands[i])
	}
	p.reason = choice.Reason.String()
	return p
}

// chooseIn is the profile c runs on first without ranking by headroom:
// the one it names, else the one that last served its conversation, else
// the default, else (a scoped key) the first by priority it may use.
func (d *Dispatcher) chooseIn(ctx context.Context, set *profileSet, c Call) (Answerer, string) {
	if c.Named != nil {
		return c.Named, reasonNamed
	}
	chosen, reason := set.answerer, reasonDefault
	if len(set.list) > 1 {
		// A conversation stays with the profile that served it last
		// (after a failover, the one it moved to), whatever the default.
		if last, err := chosen.ServedBy(ctx, c.Request); err != nil {
			d.log.Warn("could not look up the conversation's profile; the default serves it", "err", err)
		} else if gw, ok := set.byName[last]; ok && c.allows(last) {
			chosen, reason = gw, reasonSticky
		}
	}
	if c.allows(chosen.Profile()) {
		return chosen, reason
	}
	for _, p := range set.list {
		if a := p.answers(); c.allows(a.Profile()) {
			return a, headroom.Reason{Kind: headroom.Priority}.String()
		}
	}
	return nil, ""
}
