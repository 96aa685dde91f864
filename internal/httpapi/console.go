package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/forward"
	"github.com/meridian-gw/meridian/internal/web"
	"github.com/meridian-gw/meridian/internal/weblogin"
)

// consoleRoutes are the operator's console as pages: every change a form
// that posts back here with the page's CSRF token, answered with a
// redirect to the console (or, for a secret shown once, the console
// itself). The pages, like every page, need the admin key's cookie where
// there is an admin key.
type consoleRoutes struct {
	admin *adminRoutes
	site  *pageRoutes
	// csrf is the secret the forms' token derives from: the admin key's
	// digest (the same on every host behind one balancer), or a secret of
	// this process without one.
	csrf [32]byte
	host string
	// cluster lists the other hosts, whose profiles peers changes
	// through their admin API (nil cluster: this host alone).
	cluster Cluster
	peers   *forward.Forwarder
}

// maxFormBytes bounds a console form.
const maxFormBytes = 64 << 10

// token is the CSRF token of this console's forms. A page of another
// origin cannot read it, so it cannot forge a form that carries it.
func (c *consoleRoutes) token() string {
	m := hmac.New(sha256.New, c.csrf[:])
	m.Write([]byte("meridian console form"))
	return hex.EncodeToString(m.Sum(nil))
}

// form reads a console form and checks its CSRF token, answering 403
// for a form without the right one.
func (c *consoleRoutes) form(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	if !c.admin.on(w, r) {
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return nil, false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(c.token())) != 1 {
		http.Error(w, "refused: this form did not come from this Meridian's console (its CSRF token is missing or wrong); reload the console and try again", http.StatusForbidden)
		return nil, false
	}
	return r.PostForm, true
}

// page serves GET /admin: keys, profiles, sinks and aliases, with the
// outcome of the last change (done or error) and a secret shown once.
func (c *consoleRoutes) page(w http.ResponseWriter, r *http.Request) {
	if !c.admin.on(w, r) {
		return
	}
	q := r.URL.Query()
	c.render(w, r, http.StatusOK, web.ConsolePage{Done: q.Get("done"), Error: q.Get("error")})
}

// render fills the console's lists into p and writes it.
func (c *consoleRoutes) render(w http.ResponseWriter, r *http.Request, status int, p web.ConsolePage) {
	con := c.admin.console
	p.Host, p.CSRF = c.host, c.token()
	keys, err := con.Keys(r.Context())
	if err != nil {
		failWith(c.admin.log, w, r, adminError(err))
		return
	}
	for _, k := range keys {
		p.Keys = append(p.Keys, web.ConsoleKey{Name: k.Name, Status: k.Status, Scope: scopeText(k), Limits: apikeys.LimitsText(k), Capture: k.Capture})
	}
	if p.Hosts, err = c.hostProfiles(r.Context()); err != nil {
		failWith(c.admin.log, w, r, adminError(err))
		return
	}
	sinks, err := con.Sinks(r.Context())
	if err != nil {
		failWith(c.admin.log, w, r, adminError(err))
		return
	}
	for _, s := range sinks {
		p.Sinks = append(p.Sinks, web.ConsoleSink{Name: s.Name, URL: s.URL, Format: s.Format})
	}
	aliases, err := con.Aliases(r.Context())
	if err != nil {
		failWith(c.admin.log, w, r, adminError(err))
		return
	}
	for _, a := range aliases {
		p.Aliases = append(p.Aliases, web.ConsoleAlias{Name: a.Name, Model: a.Model, Effort: a.Effort})
	}
	c.site.page(w, r, status, func(b *bytes.Buffer) error { return c.site.pages.RenderConsole(b, c.site.chrome(r.Context()), p) })
}

func scopeText(k apikeys.View) string {
	scope := "profiles: any"
	if len(k.Profiles) > 0 {
		scope = "profiles: " + strings.Join(k.Profiles, ", ")
	}
	if len(k.Models) > 0 {
		return scope + "; models: " + strings.Join(k.Models, ", ")
	}
	return scope + "; models: any"
}

// after answers a change: back to the console (or the profile page, whose
// forms say so), saying what was done or what went wrong.
func (c *consoleRoutes) after(w http.ResponseWriter, r *http.Request, done string, err error) {
	q := url.Values{}
	if err != nil {
		ge := adminError(err)
		if ge.Status >= 500 {
			c.admin.log.Error("console: a change failed", "path", r.URL.Path, "err", err)
		}
		q.Set("error", ge.Message)
	} else {
		q.Set("done", done)
	}
	back := "/admin"
	if r.PostForm.Get("back") == "/profiles" {
		back = "/profiles" // the profile page's forms go back there
	}
	http.Redirect(w, r, back+"?"+q.Encode(), http.StatusSeeOther)
}

// shown answers a change that made a secret: the console with the secret
// shown this once (never in a URL).
func (c *consoleRoutes) shown(w http.ResponseWriter, r *http.Request, what, secret string, sink bool, err error) {
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	c.render(w, r, http.StatusOK, web.ConsolePage{Shown: &web.Shown{What: what, Secret: secret, Sink: sink}})
}

// number reads a form's number, 0 when blank.
func number[T int | int64 | float64](f url.Values, name string, parse func(string) (T, error)) (T, error) {
	v := strings.TrimSpace(f.Get(name))
	if v == "" {
		return 0, nil
	}
	n, err := parse(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a number", name, v)
	}
	return n, nil
}

func atoi(s string) (int, error)            { return strconv.Atoi(s) }
func atoi64(s string) (int64, error)        { return strconv.ParseInt(s, 10, 64) }
func atof(s string) (float64, error)        { return strconv.ParseFloat(s, 64) }
func names(f url.Values, k string) []string { return apikeys.Names(f.Get(k)) }

func (c *consoleRoutes) addKey(w http.ResponseWriter, r *http.Request) {
	f, ok := c.form(w, r)
	if !ok {
		return
	}
	k := console.KeyForm{Name: strings.TrimSpace(f.Get("name")), Profiles: names(f, "profiles"), Models: names(f, "models"),
		Per: f.Get("per"), Capture: f.Get("capture"), Expires: strings.TrimSpace(f.Get("expires")), DefaultModel: strings.TrimSpace(f.Get("default_model"))}
	var err error
	if k.RPM, err = number(f, "rpm", atoi); err == nil {
		if k.TokensPerDay, err = number(f, "tokens_per_day", atoi64); err == nil {
			k.Budget, err = number(f, "budget_usd", atof)
		}
	}
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	v, err := c.admin.console.AddKey(r.Context(), k)
	c.shown(w, r, "Key "+k.Name, v.Key, false, err)
}

func (c *consoleRoutes) revokeKey(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.form(w, r); ok {
		_, err := c.admin.console.RevokeKey(r.Context(), r.PathValue("name"))
		c.after(w, r, "revoked the key "+r.PathValue("name")+" on every host", err)
	}
}

func (c *consoleRoutes) rotateKey(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.form(w, r); ok {
		v, err := c.admin.console.RotateKey(r.Context(), r.PathValue("name"))
		c.shown(w, r, "Key "+r.PathValue("name")+" (rotated)", v.Key, false, err)
	}
}

func (c *consoleRoutes) addProfile(w http.ResponseWriter, r *http.Request) {
	f, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	p := console.ProfileForm{Name: strings.TrimSpace(f.Get("name")), Kind: f.Get("kind"), Secret: f.Get("secret"), BaseURL: strings.TrimSpace(f.Get("base_url"))}
	var err error
	if p.Priority, err = number(f, "priority", atoi); err != nil {
		c.after(w, r, "", err)
		return
	}
	var login *weblogin.View
	if h.remote() {
		var answer struct {
			Login *weblogin.View `json:"login"`
		}
		err = c.ask(r.Context(), h, http.MethodPost, "/v1/admin/profiles", p, &answer)
		login = answer.Login
	} else {
		login, err = c.admin.console.AddProfile(p)
	}
	if err == nil && login != nil {
		http.Redirect(w, r, loginPath(login.ID, h), http.StatusSeeOther)
		return
	}
	c.after(w, r, "added the profile "+p.Name+onHost(h), err)
}

// profileForm reads a profile's form and the host it acts on.
func (c *consoleRoutes) profileForm(w http.ResponseWriter, r *http.Request) (url.Values, profileHost, bool) {
	f, ok := c.form(w, r)
	if !ok {
		return nil, profileHost{}, false
	}
	h, err := c.hostOf(r.Context(), f.Get("host"))
	if err != nil {
		c.after(w, r, "", err)
		return nil, profileHost{}, false
	}
	return f, h, true
}

// profilePath is a profile's admin route under base.
func profilePath(base, name, tail string) string { return base + url.PathEscape(name) + tail }

func (c *consoleRoutes) profileSettings(w http.ResponseWriter, r *http.Request) {
	f, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	prio, err := number(f, "priority", atoi)
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	ch := console.ProfileChange{Priority: &prio}
	if f.Get("has_plan_only") != "" { // the box is on the form of a login or token profile
		planOnly := f.Get("plan_only") != ""
		ch.PlanOnly = &planOnly
	}
	c.after(w, r, "saved the profile "+name+onHost(h), c.setProfile(r.Context(), h, name, ch))
}

func (c *consoleRoutes) defaultProfile(w http.ResponseWriter, r *http.Request) {
	_, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	err := c.setProfile(r.Context(), h, name, console.ProfileChange{Default: true})
	c.after(w, r, "requests that name no profile now use "+name+onHost(h), err)
}

// setProfile changes a profile where it lives.
func (c *consoleRoutes) setProfile(ctx context.Context, h profileHost, name string, ch console.ProfileChange) error {
	if h.remote() {
		return c.ask(ctx, h, http.MethodPatch, profilePath("/v1/admin/profiles/", name, ""), ch, nil)
	}
	return c.admin.console.SetProfile(name, ch)
}

func (c *consoleRoutes) removeProfile(w http.ResponseWriter, r *http.Request) {
	_, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	var err error
	if h.remote() {
		err = c.ask(r.Context(), h, http.MethodDelete, profilePath("/v1/admin/profiles/", name, ""), nil, nil)
	} else {
		err = c.admin.console.RemoveProfile(r.Context(), name)
	}
	c.after(w, r, "removed the profile "+name+onHost(h), err)
}

func (c *consoleRoutes) startLogin(w http.ResponseWriter, r *http.Request) {
	_, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	var v weblogin.View
	var err error
	if h.remote() {
		err = c.ask(r.Context(), h, http.MethodPost, profilePath("/v1/admin/profiles/", name, "/login"), nil, &v)
	} else {
		v, err = c.admin.console.StartLogin(name)
	}
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	http.Redirect(w, r, loginPath(v.ID, h), http.StatusSeeOther)
}

// login serves GET /admin/logins/{id}: the login's URL and code form,
// looked at again every two seconds while the CLI works. A login on
// another host (?host=) is read from that host.
func (c *consoleRoutes) login(w http.ResponseWriter, r *http.Request) {
	if !c.admin.on(w, r) {
		return
	}
	h, err := c.hostOf(r.Context(), r.URL.Query().Get("host"))
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	id := r.PathValue("id")
	var v weblogin.View
	if h.remote() {
		err = c.ask(r.Context(), h, http.MethodGet, "/v1/admin/logins/"+url.PathEscape(id), nil, &v)
	} else if l, ok := c.admin.console.Login(id); ok {
		v = l
	} else {
		err = fmt.Errorf("no such login: it ended, or another host started it")
	}
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	if v.State == weblogin.Starting || v.State == weblogin.Checking || (v.State == weblogin.Waiting && v.CodeSent) {
		w.Header().Set("Refresh", "2")
	}
	p := web.LoginPage{ID: v.ID, Profile: v.Profile, State: v.State, URL: v.URL, Error: v.Error, CSRF: c.token(), AsksCode: v.AsksCode, CodeSent: v.CodeSent}
	if h.remote() {
		p.Host = h.id
	}
	c.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return c.site.pages.RenderLogin(b, c.site.chrome(r.Context()), p) })
}

func (c *consoleRoutes) loginCode(w http.ResponseWriter, r *http.Request) {
	f, h, ok := c.profileForm(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	var err error
	if h.remote() {
		err = c.ask(r.Context(), h, http.MethodPost, "/v1/admin/logins/"+url.PathEscape(id)+"/code", map[string]string{"code": f.Get("code")}, nil)
	} else {
		_, err = c.admin.console.LoginCode(id, f.Get("code"))
	}
	if err != nil {
		c.after(w, r, "", err)
		return
	}
	http.Redirect(w, r, loginPath(id, h), http.StatusSeeOther)
}

func (c *consoleRoutes) addSink(w http.ResponseWriter, r *http.Request) {
	f, ok := c.form(w, r)
	if !ok {
		return
	}
	name := strings.TrimSpace(f.Get("name"))
	secret, err := c.admin.console.AddSink(r.Context(), name, strings.TrimSpace(f.Get("url")), f.Get("format"))
	c.shown(w, r, "The signing secret of sink "+name, secret, true, err)
}

func (c *consoleRoutes) removeSink(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.form(w, r); ok {
		err := c.admin.console.RemoveSink(r.Context(), r.PathValue("name"))
		c.after(w, r, "removed the sink "+r.PathValue("name"), err)
	}
}

func (c *consoleRoutes) testSink(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.form(w, r); ok {
		err := c.admin.console.TestSink(r.Context(), r.PathValue("name"))
		c.after(w, r, "the sink "+r.PathValue("name")+" took a test alert", err)
	}
}

func (c *consoleRoutes) addAlias(w http.ResponseWriter, r *http.Request) {
	f, ok := c.form(w, r)
	if !ok {
		return
	}
	name := strings.TrimSpace(f.Get("name"))
	err := c.admin.console.AddAlias(r.Context(), name, strings.TrimSpace(f.Get("model")), f.Get("effort"))
	c.after(w, r, "every host answers "+name+" by "+f.Get("model")+" within a second", err)
}

func (c *consoleRoutes) removeAlias(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.form(w, r); ok {
		err := c.admin.console.RemoveAlias(r.Context(), r.PathValue("name"))
		c.after(w, r, "removed the alias "+r.PathValue("name"), err)
	}
}

// unbench and check reach the profile through the dispatcher, as their
// JSON routes do (on another host, through those routes).
func (c *consoleRoutes) unbench(b *backends) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, h, ok := c.profileForm(w, r)
		if !ok {
			return
		}
		name := r.PathValue("name")
		var err error
		switch _, served := b.dispatch.Lookup(name); {
		case h.remote():
			err = c.ask(r.Context(), h, http.MethodPost, profilePath("/v1/profiles/", name, "/unbench"), nil, nil)
		case !served:
			err = fmt.Errorf("no profile %q is served here", name)
		default:
			err = b.dispatch.Unbench(r.Context(), name)
		}
		c.after(w, r, "the profile "+name+" takes requests again on every host", err)
	}
}

func (c *consoleRoutes) check(b *backends) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, h, ok := c.profileForm(w, r)
		if !ok {
			return
		}
		name := r.PathValue("name")
		if h.remote() {
			var answer struct {
				Auth *backend.Auth `json:"auth"`
			}
			err := c.ask(r.Context(), h, http.MethodPost, profilePath("/v1/profiles/", name, "/check"), nil, &answer)
			c.after(w, r, checked(name, answer.Auth)+onHost(h), err)
			return
		}
		gw, ok := b.dispatch.Lookup(name)
		if !ok {
			c.after(w, r, "", fmt.Errorf("no profile %q is served here", name))
			return
		}
		providers := gw.Providers(r.Context())
		reading := gw.Plan(r.Context())
		err := b.dispatch.Share(r.Context(), name, reading.RateWindows())
		var auth *backend.Auth
		if len(providers) > 0 {
			auth = providers[0].Auth
		}
		c.after(w, r, checked(name, auth)+onHost(h), err)
	}
}
