package serve

import (
	"context"
	"os/exec"
	"time"

	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/weblogin"
)

// consoleLoginTimeout bounds a login relayed to the console's page: the
// time a person takes to sign in and paste the code.
const consoleLoginTimeout = 10 * time.Minute

// openConsole is the operator's console over the shared store and this
// host's profiles; close ends the logins under way and joins their CLIs.
func openConsole(ctx context.Context, db *store.Store, dataDir string, clis CLIPaths, environ []string) (*console.Console, func()) {
	profiles := profile.Open(dataDir)
	logins := weblogin.New(consoleLoginTimeout)
	c := console.New(console.Config{Keys: db.Keys, Alerts: db.Alerts, Aliases: db.Aliases, Profiles: profiles, Logins: logins,
		LoginCommand: func(p profile.Profile) (*exec.Cmd, error) {
			// Not tied to a request: the login outlives the page that
			// started it, bounded by the relay.
			if p.Kind.CLI() == "codex" {
				return profiles.CodexLoginCommand(context.WithoutCancel(ctx), p, clis.Codex, environ)
			}
			return profiles.LoginCommand(context.WithoutCancel(ctx), p, clis.Claude, environ)
		},
		LoggedIn: func(ctx context.Context, p profile.Profile) (bool, string) {
			a, why := ProfileAuth(ctx, profiles, p, clis, environ)
			return a != nil && a.LoggedIn, why
		},
		Busy: func(ctx context.Context, name string) (bool, error) {
			n, err := db.Leases.Held(ctx, name, time.Now())
			return n > 0, err
		},
	})
	return c, logins.Close
}
