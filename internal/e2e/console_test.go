package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// fakeLogin is a claude wrapper whose `auth login` acts the CLI's login
// as measured (an OSC 8 link to the sign-in page, then the code prompt)
// and whose `auth status` reports the login it made; everything else is
// the pinned CLI.
func fakeLogin(t *testing.T, code string) string {
	t.Helper()
	const signIn = "https://claude.ai/oauth/authorize?code=true&client_id=fake&state=console-test"
	script := `#!/bin/sh
case "$*" in
"auth login")
	printf 'Opening browser to sign in\342\200\246\r\n'
	printf 'Browser didn'"'"'t open? Use the url below to sign in (c to copy)\r\n\r\n'
	printf '\033]8;;` + signIn + `\007` + signIn + `\033]8;;\007\r\n\r\n'
	printf 'Paste code here if prompted > '
	read -r got
	if [ "$got" != "` + code + `" ]; then echo "OAuth error: invalid code"; exit 1; fi
	mkdir -p "$CLAUDE_CONFIG_DIR" && touch "$CLAUDE_CONFIG_DIR/.fake-logged-in"
	echo "Login successful."
	exit 0;;
*"auth status"*)
	if [ -f "$CLAUDE_CONFIG_DIR/.fake-logged-in" ]; then
		echo '{"loggedIn":true,"authMethod":"claude.ai","apiProvider":"firstParty"}'
		exit 0
	fi;;
esac
exec ` + testkit.ClaudePath(t) + ` "$@"
`
	path := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The operator's console, clicked through in headless Chromium on one of
// two hosts sharing a PostgreSQL store: signing in; a key created (shown
// once, then only its name), answering on both hosts, then revoked and
// refused on both within two seconds; an API-key profile added that
// answers with its own key; a login profile logged in from the page
// through the CLI's own login (a scripted one: the URL shown, the code
// typed); and a form posted without its CSRF token refused.
func TestConsole(t *testing.T) {
	t.Parallel()
	dsn := testkit.PostgresServer(t).NewDatabase(t)
	up := testkit.NewUpstream(t)
	var mu sync.Mutex
	apiKeys := map[string]bool{}
	up.Respond(func(r testkit.Request) testkit.Reply {
		mu.Lock()
		apiKeys[r.Header.Get("X-Api-Key")] = true
		mu.Unlock()
		return testkit.Reply{Text: "console ok"}
	})
	const code = "CODE-from-the-sign-in-page-42"
	wrapper := fakeLogin(t, code)
	hosts := []*gatewayProc{newHost(t, up), newHost(t, up)}
	for i, h := range hosts {
		h.env = append(h.env, "MERIDIAN_ADMIN_KEY="+adminKey)
		h.startOn(fmt.Sprintf("127.0.0.%d", i+2), dsn, "--cluster-key", "test-cluster-key", "--claude-path", wrapper)
	}
	a := hosts[0]

	b := newBrowser(t)
	b.do(t, chromedp.Navigate(a.url+"/admin"), chromedp.WaitVisible(`form.sign-in`))
	b.do(t, chromedp.SendKeys(`form.sign-in input[name=key]`, adminKey), chromedp.Submit(`form.sign-in`), chromedp.WaitVisible(`#new-key`))
	b.waitLocation(t, "/admin")
	b.forget() // the sign-in page came with its 401
	b.screenshot(t, "console")

	// A key, created: shown this once.
	b.do(t, chromedp.SendKeys(`#new-key input[name=name]`, "console-bot"), chromedp.SendKeys(`#new-key input[name=rpm]`, "100"),
		chromedp.Submit(`#new-key`), chromedp.WaitVisible(`#secret`))
	key := strings.TrimSpace(text(t, b, "#secret"))
	if !strings.HasPrefix(key, "mk-") {
		t.Fatalf("the key shown: %q", key)
	}
	b.screenshot(t, "console-key-shown")
	b.do(t, chromedp.Navigate(a.url+"/admin"), chromedp.WaitVisible(`tr.key[data-name="console-bot"]`))
	if page := text(t, b, "main"); strings.Contains(page, key) || len(count(t, b, "#secret")) != 0 {
		t.Fatal("the console shows the key again")
	}
	for _, h := range hosts {
		if err := countTokens(keyedAnthropic(h.url, key)); err != nil {
			t.Fatalf("the new key on %s: %v", h.url, err)
		}
	}
	// Revoked from the page: refused on both hosts within two seconds.
	b.do(t, chromedp.Click(`tr.key[data-name="console-bot"] form[action$="/revoke"] button`))
	b.waitLocation(t, "done=")
	refusedEverywhere(t, hosts, key, time.Now())
	if state := text(t, b, `tr.key[data-name="console-bot"] td:nth-child(2)`); state != "revoked" {
		t.Fatalf("the key's state on the page: %q", state)
	}

	// An API-key profile: its key is written for the CLI and used.
	const profileKey = "sk-ant-api03-CONSOLE-profile-SECRET"
	b.do(t, chromedp.SendKeys(`#new-profile input[name=name]`, "metered"), chromedp.SendKeys(`#new-profile input[name=secret]`, profileKey),
		chromedp.SendKeys(`#new-profile input[name=base_url]`, up.URL), chromedp.Submit(`#new-profile`),
		chromedp.WaitVisible(`tr.profile[data-name="metered"]`))
	if done := text(t, b, "#done"); !strings.Contains(done, "added the profile metered") {
		t.Fatalf("after adding the profile: %q", done)
	}
	if strings.Contains(text(t, b, "main"), profileKey) {
		t.Fatal("the console shows the profile's key")
	}
	waitTrue(t, 10*time.Second, "the new profile served", func() bool {
		resp, _, err := a.post(prompt("through metered"), "X-Api-Key", adminKey, "X-Meridian-Profile", "metered")
		return err == nil && resp.StatusCode == 200 && resp.Header.Get("X-Meridian-Profile") == "metered"
	})
	mu.Lock()
	usedKey := apiKeys[profileKey]
	mu.Unlock()
	if !usedKey {
		t.Fatal("the upstream never saw the profile's API key")
	}

	// A login profile on the other host, logged in from this host's page:
	// the login runs there, relayed through its admin API.
	other := hostID(t, hosts[1])
	onOther := `.host-profiles[data-host="` + other + `"] `
	b.do(t, chromedp.Navigate(a.url+"/admin"), chromedp.WaitVisible(onOther+`tr.profile[data-name="default"]`))
	b.do(t, chromedp.SetValue(`#new-profile select[name=host]`, other), chromedp.SendKeys(`#new-profile input[name=name]`, "pro"),
		chromedp.SetValue(`#new-profile select[name=kind]`, "login"), chromedp.Submit(`#new-profile`))
	b.waitLocation(t, "/admin/logins/")
	b.do(t, chromedp.WaitVisible(`#login-url`))
	href := get(t, b, chromedp.AttributeValue(chromedp.CSS(`#login-url`), "href")).Value
	if !strings.HasPrefix(href, "https://claude.ai/oauth/authorize?") || !strings.Contains(href, "state=console-test") {
		t.Fatalf("the login URL on the page: %q", href)
	}
	if title := text(t, b, "h1"); !strings.Contains(title, other) {
		t.Fatalf("the login page does not name the host: %q", title)
	}
	b.screenshot(t, "console-login")
	b.do(t, chromedp.SendKeys(`#code-form input[name=code]`, code), chromedp.Submit(`#code-form`))
	b.do(t, chromedp.WaitVisible(`#logged-in`))
	b.screenshot(t, "console-logged-in")
	// The other host serves it, and its check through this console says so.
	waitTrue(t, 10*time.Second, "the login profile checked logged in", func() bool {
		b.do(t, chromedp.Navigate(a.url+"/admin"), chromedp.WaitVisible(onOther+`tr.profile[data-name="pro"]`),
			chromedp.Click(onOther+`tr.profile[data-name="pro"] form[action$="/check"] button`))
		b.waitLocation(t, "/admin?")
		return len(count(t, b, "#done")) == 1 && text(t, b, "#done") == "profile pro: logged in (claude.ai) on host "+other
	})
	b.screenshot(t, "console-hosts")
	if len(count(t, b, `.host-profiles[data-host="`+hostID(t, a)+`"] tr.profile[data-name="pro"]`)) != 0 {
		t.Fatal("the login profile added on the other host is on this one")
	}

	// A form posted with the session's cookie but not its token.
	got, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	cookies := got.Cookies
	var session *network.Cookie
	for _, c := range cookies {
		if c.Name == "meridian_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatalf("no session cookie among %d", len(cookies))
	}
	form := url.Values{"name": {"forged"}}
	req, _ := http.NewRequest(http.MethodPost, a.url+"/admin/keys", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a forged form: %d, want 403", resp.StatusCode)
	}
	if out, _ := a.keyCommand(t, dsn, "list"); strings.Contains(out, "forged") {
		t.Fatalf("the forged form made a key: %s", out)
	}
	b.clean(t)
}
