package pool

import "context"

// A conversation's idle process may be closed off its turns' path: to make
// room (Reserve, MakeRoom), past its idle time (reap), over the pool's
// bounds (Put). Until that process is gone, a new process for the same
// conversation waits for it (awaitGone), so two CLIs never hold one
// session's transcript at once: the new one resumes what the old one left.
// Other conversations never wait on it.

// retire marks an idle session, just taken out of the pool, as closing.
// A spare holds no conversation and is not marked. Called with mu held.
func (p *Pool) retire(l *Live) {
	if l.Spare != "" {
		return
	}
	l.gone = make(chan struct{})
	if p.leaving == nil {
		p.leaving = map[string]*Live{}
	}
	p.leaving[l.Key] = l
}

// left ends what retire marked, once l's process is gone.
func (p *Pool) left(l *Live) {
	if l.gone == nil {
		return
	}
	p.mu.Lock()
	if p.leaving[l.Key] == l {
		delete(p.leaving, l.Key)
	}
	p.mu.Unlock()
	close(l.gone)
}

// awaitGone waits until conversation key's closing process, if any, is
// gone, or ctx ends.
func (p *Pool) awaitGone(ctx context.Context, key string) error {
	p.mu.Lock()
	l := p.leaving[key]
	p.mu.Unlock()
	if l == nil {
		return nil
	}
	p.log.Debug("waiting for the conversation's previous CLI process to exit before starting its next", "conversation", key)
	select {
	case <-l.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
