package serve

import (
	"context"
	"fmt"

	"github.com/meridian-gw/meridian/internal/gateway"
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
// default's.
type servedProfiles struct {
	list []servedProfile
	def  servedProfile
}

// startProfiles starts a gateway per profile with start; without
// profiles (a backend they do not apply to), one for the environment.
func startProfiles(dataDir string, environ []string, profiles bool, start func(name string, env []string) *gateway.Gateway) (*servedProfiles, error) {
	if !profiles {
		sp := servedProfile{p: profile.Profile{Name: profile.DefaultName, Kind: profile.Env}, env: environ}
		sp.gw = start(sp.p.Name, environ)
		return &servedProfiles{list: []servedProfile{sp}, def: sp}, nil
	}
	st := profile.Open(dataDir)
	l, err := st.Read()
	if err != nil {
		return nil, err
	}
	s := &servedProfiles{}
	for _, p := range l.Profiles {
		env, err := st.Env(p, environ)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		sp := servedProfile{p: p, env: env, gw: start(p.Name, env)}
		s.list = append(s.list, sp)
		if p.Name == l.Default {
			s.def = sp
		}
	}
	if s.def.gw == nil {
		s.def = s.list[0] // Read always lists the implicit default
	}
	return s, nil
}

func (s *servedProfiles) close() {
	for _, sp := range s.list {
		sp.gw.Close()
	}
}

func (s *servedProfiles) gateways() []*gateway.Gateway {
	out := make([]*gateway.Gateway, len(s.list))
	for i, sp := range s.list {
		out[i] = sp.gw
	}
	return out
}

// http lists the profiles for the HTTP server, in priority order.
func (s *servedProfiles) http() []httpapi.Profile {
	out := make([]httpapi.Profile, len(s.list))
	for i, sp := range s.list {
		out[i] = httpapi.Profile{Name: sp.p.Name, Gateway: sp.gw, Fallback: sp.p.Kind != profile.Env}
	}
	return out
}

// transcriptDirs are the project folders of the workspace in every
// profile's config dir.
func (s *servedProfiles) transcriptDirs(workspace string) func() []string {
	return func() []string {
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
	for _, sp := range s.list {
		in, err := sp.gw.TranscriptsInUse(ctx)
		if err != nil {
			return nil, err
		}
		for k := range in {
			all[k] = true
		}
	}
	return all, nil
}
