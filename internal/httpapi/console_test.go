package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/weblogin"
)

// newConsole is the operator's console over a stack's store and data dir;
// no CLI login runs in these tests.
func newConsole(t testing.TB, st *store.Store, dataDir string) *console.Console {
	logins := weblogin.New(time.Minute)
	t.Cleanup(logins.Close)
	return console.New(console.Config{Keys: st.Keys, Alerts: st.Alerts, Aliases: st.Aliases, Profiles: profile.Open(dataDir), Logins: logins,
		LoginCommand: func(profile.Profile) (*exec.Cmd, error) { return nil, errors.New("no login in this test") },
		LoggedIn:     func(context.Context, profile.Profile) (bool, string) { return false, "no login in this test" },
		Busy:         func(context.Context, string) (bool, error) { return false, nil },
	})
}

// operator is a browser signed in to a stack's console: its cookie, and
// the CSRF token of the console's forms.
type operator struct {
	t      *testing.T
	base   string
	client *http.Client
	csrf   string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func signIn(t *testing.T, base, adminKey string) *operator {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	o := &operator{t: t, base: base, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if status, _, _ := o.post("/sign-in", url.Values{"key": {adminKey}, "next": {"/admin"}}); status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	status, page, _ := o.get("/admin")
	m := csrfField.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		t.Fatalf("the console: %d %.300s", status, page)
	}
	o.csrf = m[1]
	return o
}

func (o *operator) get(path string) (int, string, http.Header) {
	o.t.Helper()
	resp, err := o.client.Get(o.base + path)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (o *operator) post(path string, form url.Values) (int, string, http.Header) {
	o.t.Helper()
	resp, err := o.client.PostForm(o.base+path, form)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// submit posts a console form with its token and follows the redirect to
// the console, returning what the console then says (done or error).
func (o *operator) submit(path string, form url.Values) (done, failed string) {
	o.t.Helper()
	form.Set("csrf", o.csrf)
	status, _, h := o.post(path, form)
	if status != http.StatusSeeOther {
		o.t.Fatalf("POST %s: %d, want a redirect", path, status)
	}
	u, err := url.Parse(h.Get("Location"))
	if err != nil || u.Path != "/admin" {
		o.t.Fatalf("POST %s went to %q", path, h.Get("Location"))
	}
	return u.Query().Get("done"), u.Query().Get("error")
}

// The console's forms on one host: a form without the page's token is
// refused and changes nothing; a key is shown once on the page that
// answers (never in a URL) and only by name after; profiles are added
// (the secret never shown), set (plan-only only where the form offered
// it), and refused where they must be; a form naming another host when
// this one is alone says so.
func TestConsoleForms(t *testing.T) {
	t.Parallel()
	const admin = "console-admin-SECRET"
	s := newStack(t, stackOptions{apiKey: admin, console: true, sessions: true})
	o := signIn(t, s.URL, admin)

	for _, token := range []string{"", "0123abcd", strings.Repeat("0", 64)} {
		if status, _, _ := o.post("/admin/keys", url.Values{"csrf": {token}, "name": {"forged"}}); status != http.StatusForbidden {
			t.Fatalf("a form with token %q: %d, want 403", token, status)
		}
	}
	if _, page, _ := o.get("/admin"); strings.Contains(page, "forged") {
		t.Fatal("a refused form made a key")
	}

	form := url.Values{"csrf": {o.csrf}, "name": {"bot"}, "rpm": {"60"}, "budget_usd": {"12.5"}, "per": {"week"}}
	status, page, h := o.post("/admin/keys", form)
	key := regexp.MustCompile(`<pre id="secret">(mk-[^<]+)</pre>`).FindStringSubmatch(page)
	if status != http.StatusOK || key == nil || h.Get("Location") != "" {
		t.Fatalf("a new key: %d %q %.400s", status, h.Get("Location"), page)
	}
	if _, page, _ = o.get("/admin"); strings.Contains(page, key[1]) || !strings.Contains(page, `data-name="bot"`) ||
		!strings.Contains(page, "60/min") || !strings.Contains(page, "$12.50/week") {
		t.Fatalf("the console after the key:\n%s", page)
	}
	if _, failed := o.submit("/admin/keys", url.Values{"name": {"bot"}}); !strings.Contains(failed, "exists") {
		t.Fatalf("the same name again: %q", failed)
	}
	if _, failed := o.submit("/admin/keys", url.Values{"name": {"other"}, "rpm": {"many"}}); failed != `rpm: "many" is not a number` {
		t.Fatalf("a bad number: %q", failed)
	}

	const secret = "sk-ant-api03-CONSOLE-form-SECRET"
	if done, failed := o.submit("/admin/profiles", url.Values{"name": {"metered"}, "kind": {"api"}, "secret": {secret}}); failed != "" ||
		done != "added the profile metered on this host" {
		t.Fatalf("an API-key profile: %q %q", done, failed)
	}
	if _, failed := o.submit("/admin/profiles", url.Values{"name": {"sub"}, "kind": {"token"}}); failed != "a token profile needs its token" {
		t.Fatalf("a token profile without its token: %q", failed)
	}
	if _, failed := o.submit("/admin/profiles", url.Values{"name": {"sub"}, "kind": {"token"}, "secret": {"sk-ant-oat01-x"}}); failed != "" {
		t.Fatal(failed)
	}
	if _, page, _ = o.get("/admin"); strings.Contains(page, secret) || !strings.Contains(page, `data-name="metered"`) {
		t.Fatal("the console shows a profile's secret, or not the profile")
	}
	// Plan-only is set where the form offered it: ticked, then not.
	for _, want := range []bool{true, false} {
		form := url.Values{"priority": {"3"}, "has_plan_only": {"1"}}
		if want {
			form.Set("plan_only", "1")
		}
		if _, failed := o.submit("/admin/profiles/sub/settings", form); failed != "" {
			t.Fatal(failed)
		}
		l, err := profile.Open(s.DataDir).Read()
		p, _ := l.Get("sub")
		if err != nil || p.PlanOnly != want || p.Priority != 3 {
			t.Fatalf("after saving plan-only %v: %+v %v", want, p, err)
		}
	}
	if _, failed := o.submit("/admin/profiles/default/remove", url.Values{}); !strings.Contains(failed, "implicit") {
		t.Fatalf("removing the implicit default: %q", failed)
	}
	if done, failed := o.submit("/admin/profiles/metered/remove", url.Values{}); failed != "" || done != "removed the profile metered on this host" {
		t.Fatalf("remove: %q %q", done, failed)
	}
	if _, failed := o.submit("/admin/profiles/sub/default", url.Values{"host": {"elsewhere"}}); failed != `no host "elsewhere": this meridian is alone` {
		t.Fatalf("another host, alone: %q", failed)
	}
	if status, _, h := o.get("/admin/logins/nope"); status != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "no+such+login") {
		t.Fatalf("an unknown login: %d %q", status, h.Get("Location"))
	}
}
