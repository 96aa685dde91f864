package keeper

import "time"

// restarts bounds crash recovery: at most max restarts inside any window;
// one more crash inside it and recovery is exhausted.
type restarts struct {
	max    int
	window time.Duration
	at     []time.Time
}

// allow reports whether a crash at now is restarted, and records it.
func (r *restarts) allow(now time.Time) bool {
	kept := r.at[:0]
	for _, t := range r.at {
		if now.Sub(t) < r.window {
			kept = append(kept, t)
		}
	}
	r.at = kept
	if len(r.at) >= r.max {
		return false
	}
	r.at = append(r.at, now)
	return true
}
