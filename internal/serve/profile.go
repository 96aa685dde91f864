package serve

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/meridian-gw/meridian/internal/dispatch"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/headroom"
	"github.com/meridian-gw/meridian/internal/httpapi"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/transcripts"
)

// servedProfile is one profile with the gateway that serves it.
type servedProfile struct {
	p   profile.Profile
	env []string // the CLI's environment in it
	gw  *gateway.Gateway
}

// servedProfiles are every profile's gateways, in priority order, and the
// default's. With profiles on, a running serve follows the profile list:
// `meridian profile add`, `remove` and `default` take effect without a
// restart.
type servedProfiles struct {
	store   *profile.Store // nil: profiles do not apply to the backend
	environ []string
	start   func(name string, env []string) *gateway.Gateway
	serves  func(profile.Kind) bool // the kinds of this backend's CLI
	log     *slog.Logger

	mu   sync.Mutex
	list []servedProfile
	def  servedProfile

	// Gateways of removed (or changed) profiles finish what they run
	// before they close; stop makes them close at once.
	retiring sync.WaitGroup
	stop     chan struct{}
}

// retirePoll is how often a retired profile's gateway is asked whether
// its last request is done.
const retirePoll = 200 * time.Millisecond

// startProfiles starts a gateway per profile that serves takes (a
// profile of another CLI's kind is left to that CLI) with start; without
// serves (a backend profiles do not apply to), one for the environment.
func startProfiles(dataDir string, environ []string, serves func(profile.Kind) bool, start func(name string, env []string) *gateway.Gateway, log *slog.Logger) (*servedProfiles, error) {
	s := &servedProfiles{environ: environ, start: start, serves: serves, log: log, stop: make(chan struct{})}
	if serves == nil {
		sp := servedProfile{p: profile.Profile{Name: profile.DefaultName, Kind: profile.Env}, env: environ}
		sp.gw = start(sp.p.Name, environ)
		s.list, s.def = []servedProfile{sp}, sp
		return s, nil
	}
	s.store = profile.Open(dataDir)
	l, err := s.store.Read()
	if err != nil {
		return nil, err
	}
	list, def, _, err := s.assemble(l, nil)
	if err != nil {
		for _, sp := range list {
			sp.gw.Close()
		}
		return nil, err
	}
	s.list, s.def = list, def
	return s, nil
}

// assemble makes the served list for l, reusing the gateways of current
// whose profile is unchanged (same kind, base URL and environment) and
// starting the rest; it returns the gateways no longer used.
func (s *servedProfiles) assemble(l profile.List, current []servedProfile) (list []servedProfile, def servedProfile, unused []*gateway.Gateway, err error) {
	kept := map[*gateway.Gateway]bool{}
	for _, p := range l.Profiles {
		if !s.serves(p.Kind) {
			continue
		}
		env, err := s.store.Env(p, s.environ)
		if err != nil {
			for _, sp := range list {
				if !slices.ContainsFunc(current, func(c servedProfile) bool { return c.gw == sp.gw }) {
					sp.gw.Close()
				}
			}
			return nil, servedProfile{}, nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		sp := servedProfile{p: p, env: env}
		if i := slices.IndexFunc(current, func(c servedProfile) bool { return sameProfile(c, sp) }); i >= 0 {
			sp.gw = current[i].gw
			kept[sp.gw] = true
		} else {
			sp.gw = s.start(p.Name, env)
		}
		list = append(list, sp)
		if p.Name == l.Default {
			def = sp
		}
	}
	if def.gw == nil {
		def = list[0] // Read always lists the implicit default
	}
	for _, c := range current {
		if !kept[c.gw] {
			unused = append(unused, c.gw)
		}
	}
	return list, def, unused, nil
}

// sameProfile: a gateway serves a profile while its name, kind, base URL
// and the CLI's environment stay what they were.
func sameProfile(a, b servedProfile) bool {
	return a.p.Name == b.p.Name && a.p.Kind == b.p.Kind && a.p.BaseURL == b.p.BaseURL && slices.Equal(a.env, b.env)
}

// reload reads the profile list again and serves it: new profiles get
// their gateways, removed ones retire. It reports whether anything
// changed.
func (s *servedProfiles) reload() (bool, error) {
	l, err := s.store.Read()
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list, def, unused, err := s.assemble(l, s.list)
	if err != nil {
		return false, err
	}
	changed := len(unused) > 0 || def.gw != s.def.gw || len(list) != len(s.list)
	for i := range list {
		changed = changed || list[i].gw != s.list[i].gw || list[i].p != s.list[i].p
	}
	s.list, s.def = list, def
	for _, gw := range unused {
		s.retire(gw)
	}
	return changed, nil
}

// retire closes a gateway once nothing runs or waits in it (requests that
// chose it before it was removed finish there), or at once on stop.
func (s *servedProfiles) retire(gw *gateway.Gateway) {
	s.retiring.Go(func() {
		t := time.NewTicker(retirePoll)
		defer t.Stop()
		for {
			if in := gw.Inflight().Backends; sumRunning(in) == 0 {
				break
			}
			select {
			case <-s.stop:
				gw.Close()
				return
			case <-t.C:
			}
		}
		gw.Close()
	})
}

func sumRunning(loads map[string]gateway.BackendLoad) int {
	n := 0
	for _, b := range loads {
		n += b.Running + b.Queued
	}
	return n
}

// watch follows the profile list until ctx ends: each change of
// profiles.json (replaced whole by its writers) is read and served, and
// apply hears the new default and list. A list that cannot be read keeps
// the profiles as they are.
func (s *servedProfiles) watch(ctx context.Context, apply func(def *gateway.Gateway, list []httpapi.Profile)) error {
	if s.store == nil {
		return nil
	}
	dir := s.store.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch profiles: %w", err)
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return fmt.Errorf("watch profiles: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = w.Close()
	}()
	// Writers replace the file by renaming a temporary one over it: a
	// short quiet after the last event reads the finished list once.
	var settle <-chan time.Time
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Name == s.store.ListPath() || ev.Op&(fsnotify.Create|fsnotify.Rename) != 0 {
				settle = time.After(100 * time.Millisecond)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.log.Warn("watching the profile list", "err", err)
		case <-settle:
			settle = nil
			changed, err := s.reload()
			if err != nil {
				s.log.Warn("the profile list changed but could not be served; the profiles stay as they were", "err", err)
				continue
			}
			if changed {
				apply(s.defGateway(), s.http())
				s.log.Info("profiles changed: serving them now", "profiles", s.names(), "default", s.defName())
			}
		}
	}
}

func (s *servedProfiles) defGateway() *gateway.Gateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.def.gw
}

func (s *servedProfiles) defName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.def.p.Name
}

func (s *servedProfiles) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, sp := range s.list {
		out = append(out, sp.p.Name)
	}
	return out
}

// close closes every gateway, retired ones too.
func (s *servedProfiles) close() {
	close(s.stop)
	s.retiring.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.list {
		sp.gw.Close()
	}
}

func (s *servedProfiles) gateways() []*gateway.Gateway {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*gateway.Gateway, len(s.list))
	for i, sp := range s.list {
		out[i] = sp.gw
	}
	return out
}

// http lists the profiles for the HTTP server, in priority order.
func (s *servedProfiles) http() []httpapi.Profile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]httpapi.Profile, len(s.list))
	for i, sp := range s.list {
		out[i] = httpapi.Profile{Name: sp.p.Name, Gateway: sp.gw, Fallback: sp.p.Kind != profile.Env, PlanOnly: sp.p.PlanOnly}
	}
	return out
}

// transcriptDirs are the project folders of the workspace in every
// profile's config dir.
func (s *servedProfiles) transcriptDirs(workspace string) func() []string {
	return func() []string {
		s.mu.Lock()
		defer s.mu.Unlock()
		var dirs []string
		for _, sp := range s.list {
			dirs = append(dirs, transcripts.ProjectDirs(transcripts.ConfigDir(sp.env), workspace)...)
		}
		return dirs
	}
}

// transcriptsInUse joins what every profile's conversations need.
func (s *servedProfiles) transcriptsInUse(ctx context.Context) (map[string]bool, error) {
	all := map[string]bool{}
	for _, gw := range s.gateways() {
		in, err := gw.TranscriptsInUse(ctx)
		if err != nil {
			return nil, err
		}
		for k := range in {
			all[k] = true
		}
	}
	return all, nil
}

// accountsMode checks --accounts and --move-at.
func accountsMode(mode string, moveAt float64) (dispatch.Accounts, error) {
	if moveAt <= 0 || moveAt > 100 {
		return "", fmt.Errorf("--move-at %g: want a percentage above 0, at most 100", moveAt)
	}
	switch a := dispatch.Accounts(mode); a {
	case dispatch.ByHeadroom, dispatch.ByPriority:
		return a, nil
	}
	return "", fmt.Errorf("--accounts %q: want %s or %s", mode, dispatch.ByHeadroom, dispatch.ByPriority)
}

// thresholds reads --alert-at: percentages, comma-separated.
func thresholds(v string) ([]float64, error) {
	var out []float64
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p <= 0 || p > 100 {
			return nil, fmt.Errorf("--alert-at %q: want percentages above 0, at most 100, comma-separated (e.g. 80,100)", v)
		}
		out = append(out, p/100)
	}
	return out, nil
}

// The defaults of --accounts and --move-at (a percentage).
const (
	DefaultAccounts = string(dispatch.ByHeadroom)
	DefaultMoveAt   = headroom.DefaultMoveAt * 100
)
