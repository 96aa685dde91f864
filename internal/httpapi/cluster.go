package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/meridian-gw/meridian/internal/cluster"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/web"
)

// Cluster knows the meridians sharing the store (package cluster).
type Cluster interface {
	Members(ctx context.Context) ([]cluster.Member, error)
	// Drain tells the others this host takes no new work.
	Drain(ctx context.Context)
	// Reachable says whether this host can reach the store, without
	// which it serves no model request.
	Reachable(ctx context.Context) bool
}

// clusterRoutes say how this host and the others sharing its store stand:
// the readiness a load balancer checks, and GET /cluster.
type clusterRoutes struct {
	host     string  // this host's id
	store    string  // the store's engine
	storeAt  string  // where it is (never a password)
	cluster  Cluster // nil: this host alone
	version  string
	chrome   func(context.Context) web.Chrome
	pages    *web.Pages
	log      *slog.Logger
	load     func() gateway.BackendLoad // this host's processes now
	draining func() bool
	paused   func() bool
}

// ready answers a load balancer's readiness check: 200 while this host
// takes requests; 503 with a wait from the moment it drains, and while
// the store is out of its reach (then every model request would get a
// 503). It needs no key and is never refused by the drain itself.
func (c *clusterRoutes) ready(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	status := "ready"
	switch {
	case c.draining():
		status = "draining"
	case c.paused():
		status = "paused"
	case c.cluster != nil && !c.cluster.Reachable(r.Context()):
		status = "store_unreachable"
	}
	if status != "ready" {
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": status, "host": c.host})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": status, "host": c.host})
}

// clusterHost is one host of GET /cluster.
type clusterHost struct {
	Host        string    `json:"host"`
	Addr        string    `json:"addr,omitempty"`
	Version     string    `json:"version,omitempty"`
	State       string    `json:"state"`
	Live        int       `json:"live_processes"`
	Running     int       `json:"running_turns"`
	Started     time.Time `json:"started"`
	Heartbeat   time.Time `json:"heartbeat_expires"`
	Self        bool      `json:"self,omitempty"`
	Incarnation string    `json:"incarnation"`
}

// clusterView is GET /cluster: the hosts sharing the store, this one
// first.
type clusterView struct {
	Host  string        `json:"host"`
	Store string        `json:"store,omitempty"`
	Hosts []clusterHost `json:"hosts"`
	Error string        `json:"error,omitempty"`
}

func (c *clusterRoutes) view(ctx context.Context) clusterView {
	v := clusterView{Host: c.host, Store: c.store, Hosts: []clusterHost{}}
	if c.cluster == nil {
		l := c.load()
		v.Hosts = append(v.Hosts, clusterHost{Host: c.host, State: "serving", Live: l.Live, Running: l.Running, Self: true})
		return v
	}
	members, err := c.cluster.Members(ctx)
	if err != nil {
		c.log.Warn("store: could not list the hosts sharing it", "err", err)
		v.Error = "the store could not be read"
		return v
	}
	for _, m := range members {
		h := clusterHost{Host: m.Host.Host, Incarnation: m.Incarnation, Addr: m.Addr, Version: m.Version, State: m.State,
			Live: m.Live, Running: m.Running, Started: m.Started, Heartbeat: m.Expires, Self: m.Self}
		if m.Self {
			// This host's own figures are known now, not at its last beat.
			l := c.load()
			h.Live, h.Running = l.Live, l.Running
			if c.draining() {
				h.State = "draining"
			}
			v.Hosts = append([]clusterHost{h}, v.Hosts...)
			continue
		}
		v.Hosts = append(v.Hosts, h)
	}
	return v
}

// hosts serves GET /cluster: JSON, or the page to a browser.
func (c *clusterRoutes) hosts(w http.ResponseWriter, r *http.Request) {
	v := c.view(r.Context())
	if !wantsHTML(r) {
		status := http.StatusOK
		if v.Error != "" {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "5")
		}
		writeJSON(w, status, v)
		return
	}
	page := web.ClusterPage{Host: v.Host, Store: v.Store, Error: v.Error}
	for _, h := range v.Hosts {
		page.Hosts = append(page.Hosts, web.ClusterHost{Host: h.Host, Addr: h.Addr, Version: h.Version, State: h.State,
			Live: h.Live, Running: h.Running, Started: h.Started, Heartbeat: h.Heartbeat, Self: h.Self})
	}
	renderPage(c.log, w, r, http.StatusOK, func(b *bytes.Buffer) error { return c.pages.RenderCluster(b, c.chrome(r.Context()), page) })
}

// storeHealth is the store's part of GET /health and /inflight: its
// engine and how many hosts share it; for /inflight, behind the API key,
// also its place (never a password) and those hosts.
type storeHealth struct {
	Engine    string       `json:"engine"`
	At        string       `json:"at,omitempty"`
	LiveHosts int          `json:"live_hosts"`
	Hosts     []hostHealth `json:"hosts,omitempty"`
	Error     string       `json:"error,omitempty"`
}

type hostHealth struct {
	Host    string    `json:"host"`
	Addr    string    `json:"addr,omitempty"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	Expires time.Time `json:"heartbeat_expires"`
}

func (c *clusterRoutes) storeHealth(ctx context.Context, detailed bool) *storeHealth {
	if c.store == "" {
		return nil
	}
	out := &storeHealth{Engine: c.store, LiveHosts: 1}
	if detailed && c.store != "sqlite" {
		out.At = c.storeAt // a data dir's path is for no answer
	}
	if c.cluster == nil {
		return out
	}
	members, err := c.cluster.Members(ctx)
	if err != nil {
		c.log.Warn("store: could not list the hosts sharing it", "err", err)
		out.Error = "the store could not be read"
		return out
	}
	out.LiveHosts = 0
	for _, m := range members {
		if m.State == cluster.Gone {
			continue
		}
		out.LiveHosts++
		if detailed {
			out.Hosts = append(out.Hosts, hostHealth{Host: m.Host.Host, Addr: m.Addr, Version: m.Version, Started: m.Started, Expires: m.Expires})
		}
	}
	return out
}
