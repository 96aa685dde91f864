package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/web"
)

// Profiles live on their hosts (a login is files in the profile's config
// dir there), so the console shows each host's and changes them where
// they live: this host's through its console, another's through that
// host's admin API over the cluster's hop. Behind a balancer, whichever
// host serves the page, the operator sees and changes them all.

// listPeerWait bounds asking another host for its profiles while the
// console's page is drawn: one that does not answer is shown as such.
const listPeerWait = 3 * time.Second

// peerWait bounds a change made on another host; a check or a login's
// start runs the CLI there.
const peerWait = time.Minute

// profileHost is the host a profile form acts on: this one (addr "") or
// another of the cluster, at the address it advertises.
type profileHost struct {
	id, addr string
}

func (h profileHost) remote() bool { return h.addr != "" }

// hostOf is the host a form names ("" or this host's id: this one). Only
// a host serving in the cluster is reached, at the address the store
// holds for it: the form names a host, never an address.
func (c *consoleRoutes) hostOf(ctx context.Context, id string) (profileHost, error) {
	if id == "" || id == c.host {
		return profileHost{id: c.host}, nil
	}
	if c.cluster == nil {
		return profileHost{}, fmt.Errorf("no host %q: this meridian is alone", id)
	}
	members, err := c.cluster.Members(ctx)
	if err != nil {
		return profileHost{}, fmt.Errorf("store: list the hosts: %w", err)
	}
	for _, m := range members {
		if m.Owner.Host == id && m.State != cluster.Gone && m.Addr != "" {
			return profileHost{id: id, addr: m.Addr}, nil
		}
	}
	return profileHost{}, fmt.Errorf("host %q is not serving in this cluster now", id)
}

// ask makes a change on another host through its admin API.
func (c *consoleRoutes) ask(ctx context.Context, h profileHost, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, peerWait)
	defer cancel()
	return c.peers.Ask(ctx, h.id, h.addr, method, path, body, out)
}

// hostProfiles are the profiles of every host: this one first, then each
// other serving host's as it answers (or why it did not).
func (c *consoleRoutes) hostProfiles(ctx context.Context) ([]web.ConsoleHost, error) {
	local, err := c.admin.console.Profiles()
	if err != nil {
		return nil, err
	}
	out := []web.ConsoleHost{{ID: c.host, Self: true, Profiles: consoleProfiles(local)}}
	if c.cluster == nil {
		return out, nil
	}
	members, err := c.cluster.Members(ctx)
	if err != nil {
		out[0].Error = "the other hosts could not be listed: the store did not answer"
		return out, nil
	}
	var others []profileHost
	for _, m := range members {
		if !m.Self && m.State != cluster.Gone && m.Addr != "" {
			others = append(others, profileHost{id: m.Owner.Host, addr: m.Addr})
		}
	}
	out = append(out, make([]web.ConsoleHost, len(others))...)
	var wg sync.WaitGroup
	for i, h := range others {
		row := &out[i+1]
		row.ID = h.id
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, listPeerWait)
			defer cancel()
			var answer struct {
				Profiles []console.Profile `json:"profiles"`
			}
			if err := c.peers.Ask(actx, h.id, h.addr, http.MethodGet, "/v1/admin/profiles", nil, &answer); err != nil {
				row.Error = gateway.Redact(err.Error())
				return
			}
			row.Profiles = consoleProfiles(answer.Profiles)
		})
	}
	wg.Wait()
	return out, nil
}

func consoleProfiles(ps []console.Profile) []web.ConsoleProfile {
	out := make([]web.ConsoleProfile, 0, len(ps))
	for _, p := range ps {
		out = append(out, web.ConsoleProfile{Name: p.Name, Kind: string(p.Kind), Priority: p.Priority, PlanOnly: p.PlanOnly, Default: p.Default})
	}
	return out
}

// loginPath is the page of a login under way on h.
func loginPath(id string, h profileHost) string {
	if !h.remote() {
		return "/admin/logins/" + url.PathEscape(id)
	}
	return "/admin/logins/" + url.PathEscape(id) + "?host=" + url.QueryEscape(h.id)
}

// checked says what a profile's check found of its login.
func checked(name string, auth *backend.Auth) string {
	state := "its login could not be read"
	if auth != nil {
		state = "not logged in"
		if auth.LoggedIn {
			state = "logged in (" + auth.Method + ")"
		}
	}
	return "profile " + name + ": " + state
}

// onHost names the host in what the console says it did.
func onHost(h profileHost) string {
	if h.remote() {
		return " on host " + h.id
	}
	return " on this host"
}
