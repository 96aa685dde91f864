package desktop

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// changer makes the companion's changes to its gateway with the key it
// holds: pause and resume, the default profile, and the panel's sign-in.
type changer struct {
	url, key string
	client   *http.Client
}

func (c *changer) do(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("X-Api-Key", c.key)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// pause pauses (or resumes) serving: running turns finish.
func (c *changer) pause(ctx context.Context, on bool) error {
	if on {
		return c.do(ctx, http.MethodPost, "/v1/admin/pause", "")
	}
	return c.do(ctx, http.MethodPost, "/v1/admin/resume", "")
}

// setDefault makes a profile the default.
func (c *changer) setDefault(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPatch, "/v1/admin/profiles/"+url.PathEscape(name), `{"default":true}`)
}

// sessionCookie signs in as a browser does, for the panel window: the
// gateway's answer sets its session cookie (a digest of the key, never
// the key). A gateway without an admin key needs none ("").
func (c *changer) sessionCookie(ctx context.Context) (string, error) {
	if c.key == "" {
		return "", nil
	}
	form := url.Values{"key": {c.key}, "next": {"/panel"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/sign-in", strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("sign in: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noFollow := *c.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Do(req)
	if err != nil {
		return "", fmt.Errorf("sign in: %w", err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == "meridian_session" {
			return ck.Name + "=" + ck.Value, nil
		}
	}
	return "", fmt.Errorf("sign in: the gateway refused the companion's key (%d)", resp.StatusCode)
}
