package serve

import "github.com/meridian-gw/meridian/internal/profile"

// defaultProfile is the profile requests run under and the CLI's
// environment in it.
func defaultProfile(dataDir string, environ []string) (profile.Profile, []string, error) {
	st := profile.Open(dataDir)
	l, err := st.Read()
	if err != nil {
		return profile.Profile{}, nil, err
	}
	p, ok := l.Get(l.Default)
	if !ok {
		p, _ = l.Get(profile.DefaultName)
	}
	env, err := st.Env(p, environ)
	return p, env, err
}
