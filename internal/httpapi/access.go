package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/capture"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/pricing"
	"github.com/meridian-gw/meridian/internal/retryafter"
	"github.com/meridian-gw/meridian/internal/telemetry"
)

// access knows who may call: the admin key, the keys of people and tools
// (with their scopes and limits), and the browsers signed in with either.
type access struct {
	admin     [32]byte // digest of the admin key, compared in constant time
	hasAdmin  bool
	keys      *apikeys.Ring      // nil without keys
	admission *apikeys.Admission // nil without keys
	prices    *pricing.Table     // what a key's budget counts; nil: nothing
	log       *slog.Logger
	// signInPage answers a browser that came without the admin key.
	signInPage http.HandlerFunc
}

// callerKey carries the key a request authenticated with.
type callerKey struct{}

// keyCaller is that key; counted says another host already counted the
// request against its limits and forwarded it here.
type keyCaller struct {
	key     apikeys.Key
	counted bool
}

func withCaller(ctx context.Context, k apikeys.Key, counted bool) context.Context {
	return context.WithValue(ctx, callerKey{}, &keyCaller{key: k, counted: counted})
}

// caller is the key a request came with; nil for the admin key or an
// open gateway.
func caller(ctx context.Context) *apikeys.Key {
	if c, _ := ctx.Value(callerKey{}).(*keyCaller); c != nil {
		return &c.key
	}
	return nil
}

// callerName names the key a request came with, which scopes its
// conversation; "" for the admin key or an open gateway.
func callerName(ctx context.Context) string {
	if k := caller(ctx); k != nil {
		return k.Name
	}
	return ""
}

// counted reports whether the request's limits were checked by the host
// that forwarded it.
func counted(ctx context.Context) bool {
	c, _ := ctx.Value(callerKey{}).(*keyCaller)
	return c != nil && c.counted
}

func scopeOf(k *apikeys.Key) keyrule.Scope {
	return keyrule.Scope{Profiles: k.Profiles, Models: k.Models}
}

// allowedProfile is nil (every profile) unless the caller's key is scoped.
func allowedProfile(ctx context.Context) func(string) bool {
	k := caller(ctx)
	if k == nil || len(k.Profiles) == 0 {
		return nil
	}
	return scopeOf(k).AllowsProfile
}

// authenticate lets a request through that carries the admin key, a key
// in force (noted in its context), or no key where nothing needs one. It
// answers the others and reports false.
func (s *access) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if s.hasAdmin && (s.keyOK(r) || s.cookieOK(r)) {
		return r, true
	}
	presented := presentedKey(r)
	anyKey := false
	if s.keys != nil && (presented != "" || !s.hasAdmin) {
		now := time.Now()
		k, found, exist, err := s.keys.Lookup(r.Context(), presented, now)
		if err != nil {
			s.log.ErrorContext(r.Context(), "store: could not read the API keys", "err", err)
			writeError(w, r, gateway.Unavailable("could not check the API key: the store is not answering; send it again"))
			return nil, false
		}
		anyKey = exist
		if found {
			if e := keyRefusal(k, r, now); e != nil {
				writeError(w, r, e)
				return nil, false
			}
			telemetry.From(r.Context()).Keyed(k.Name)
			capture.From(r.Context()).SetMode(k.Capture)
			return r.WithContext(withCaller(r.Context(), k, false)), true
		}
	}
	// Without an admin key the routes other than the model routes stay
	// open (the listener is loopback then), and so do the model routes
	// until a key exists. A key's own page finds its key by its cookie,
	// or asks for it.
	if !s.hasAdmin && (!modelRoute(r) || !anyKey) || r.URL.Path == "/key" {
		return r, true
	}
	if s.hasAdmin && wantsHTML(r) {
		s.signInPage(w, r)
		return nil, false
	}
	// The header's name stays out of these: Claude Code shows any 401
	// that names x-api-key as "Not logged in", hiding the rest.
	msg := "invalid or missing API key: send this Meridian's admin key as the API key (or a bearer token)"
	if anyKey {
		// Most often a client set up before the first key was made.
		msg = "invalid or missing API key: this Meridian takes the keys `meridian key add` makes, as the API key or a bearer token; " +
			"a client set up without one is pointed at one with `meridian setup CLIENT --key KEY`"
	}
	writeError(w, r, &gateway.Error{Status: http.StatusUnauthorized, Type: anthropic.ErrAuthentication, Message: msg})
	return nil, false
}

// keyRefusal is why a known key may not make this request: revoked,
// expired, or a route only the admin key reaches.
func keyRefusal(k apikeys.Key, r *http.Request, now time.Time) *gateway.Error {
	switch keyrule.State(k.Revoked, k.Expires, now) {
	case keyrule.Revoked:
		return &gateway.Error{Status: http.StatusUnauthorized, Type: anthropic.ErrAuthentication,
			Message: fmt.Sprintf("the API key %q was revoked on %s", k.Name, k.Revoked.UTC().Format(time.DateTime+" UTC"))}
	case keyrule.Expired:
		return &gateway.Error{Status: http.StatusUnauthorized, Type: anthropic.ErrAuthentication,
			Message: fmt.Sprintf("the API key %q expired on %s", k.Name, k.Expires.UTC().Format(time.DateTime+" UTC"))}
	}
	if !modelRoute(r) && r.URL.Path != "/key" {
		return &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission,
			Message: fmt.Sprintf("the API key %q reaches the model routes only; %s needs the admin key", k.Name, r.URL.Path)}
	}
	return nil
}

// modelRoute: what a person's or tool's key may call (the model APIs and
// the model list, under a mounted backend's prefix too); the rest (pages,
// telemetry, sessions, quota) is the admin's.
func modelRoute(r *http.Request) bool {
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/antigravity"); ok && strings.HasPrefix(rest, "/") {
		p = rest
	}
	p = strings.TrimPrefix(p, "/v1")
	switch {
	case p == "/messages", p == "/messages/count_tokens", p == "/chat/completions", p == "/models",
		strings.HasPrefix(p, "/models/"), p == "/responses", strings.HasPrefix(p, "/responses/"), p == "/usage/key":
		return true
	}
	return false
}

// admitKey checks a model request against its key: the profile it names
// and the model it asks for must be in the key's scope (403 naming what
// it may use), and its limits must leave room (429 with the key's own
// wait). done ends the request's count and adds its tokens; ok false means
// the refusal is answered.
func (s *access) admitKey(w http.ResponseWriter, r *http.Request, model string) (done func(), ok bool) {
	k := caller(r.Context())
	if k == nil {
		return func() {}, true
	}
	if !inScope(w, r, k, model) {
		return nil, false
	}
	if apikeys.Limits(*k) == (keyrule.Limits{}) {
		return func() {}, true
	}
	tokens := s.admission.Counting(r.Context(), *k, s.used(r.Context()))
	if counted(r.Context()) {
		// The host that forwarded it counts it running; the tokens are
		// known here, where it runs.
		return tokens, true
	}
	release, verdict, err := s.admission.Admit(r.Context(), *k, time.Now())
	if err != nil {
		s.log.ErrorContext(r.Context(), "store: could not count a request of an API key", "key", k.Name, "err", err)
		writeError(w, r, gateway.Unavailable("could not check the API key's limits: the store is not answering; send it again"))
		return nil, false
	}
	if release == nil {
		writeError(w, r, overLimit(k, verdict))
		return nil, false
	}
	return func() { release(); tokens() }, true
}

// used reads what a request has used so far, in what a key's limits
// count: tokens, and their API-equivalent cost where the model's price is
// known (an unpriced model's answers cost a budget nothing).
func (s *access) used(ctx context.Context) func() apikeys.Use {
	tr := telemetry.From(ctx)
	return func() apikeys.Use {
		model, t := tr.Usage()
		u := apikeys.Use{Tokens: t.DayTokens()}
		if s.prices != nil {
			if usd, ok := s.prices.Estimate(model, t.Input, t.Output, t.CacheRead, t.CacheWrite); ok {
				u.Micros = keyrule.Micros(usd)
			}
		}
		return u
	}
}

// inScope answers a 403 naming what the key may use when the profile the
// request names or the model it asks for is outside its scope.
func inScope(w http.ResponseWriter, r *http.Request, k *apikeys.Key, model string) bool {
	scope := scopeOf(k)
	if gw := named(r.Context()); gw != nil && !scope.AllowsProfile(gw.Profile()) {
		writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission, Param: headerProfile,
			Message: fmt.Sprintf("the API key %q may not use the profile %q; it may use: %s", k.Name, gw.Profile(), strings.Join(k.Profiles, ", "))})
		return false
	}
	if model != "" && !scope.AllowsModel(model) {
		writeError(w, r, &gateway.Error{Status: http.StatusForbidden, Type: anthropic.ErrPermission, Param: "model",
			Message: fmt.Sprintf("the API key %q may not use the model %q; it may use: %s", k.Name, model, strings.Join(k.Models, ", "))})
		return false
	}
	return true
}

// overLimit is the 429 for a key over one of its limits, with its wait.
func overLimit(k *apikeys.Key, v keyrule.Verdict) *gateway.Error {
	var what string
	switch v.Limit {
	case "rpm":
		what = fmt.Sprintf("its %d requests a minute", k.RPM)
	case "concurrent":
		what = fmt.Sprintf("its %d requests at once", k.Concurrent)
	case "budget":
		what = fmt.Sprintf("its budget of $%.2f a %s (API-equivalent cost; it renews at %s)", keyrule.Dollars(k.Budget), k.Per,
			time.Now().Add(v.Wait).UTC().Format("15:04 UTC, Jan 2"))
	default:
		what = fmt.Sprintf("its %d tokens a day (the budget resets at 00:00 UTC)", k.TokensPerDay)
	}
	return &gateway.Error{Status: http.StatusTooManyRequests, Type: anthropic.ErrRateLimit, RetryAfter: v.Wait, WaitSource: retryafter.FromKey,
		Message: fmt.Sprintf("the API key %q is at %s; send it again in %s", k.Name, what, v.Wait.Round(time.Second))}
}

// keyCookie holds, for a browser signed in with a person's or tool's key,
// a token derived from the key's digest (never the key); it opens that
// key's own page, /key, and nothing else.
const keyCookie = "meridian_key_session"

func keyToken(digest string) string {
	sum := sha256.Sum256([]byte("meridian key session\x00" + digest))
	return hex.EncodeToString(sum[:])
}

// keyInForce finds an active key by its secret.
func (s *access) keyInForce(r *http.Request, secret string) (apikeys.Key, bool) {
	if s.keys == nil {
		return apikeys.Key{}, false
	}
	return s.keys.Active(r.Context(), secret, time.Now())
}

// keyOfCookie finds the active key whose token the request's cookie holds.
func (s *access) keyOfCookie(r *http.Request) (apikeys.Key, bool) {
	c, err := r.Cookie(keyCookie)
	if err != nil || s.keys == nil {
		return apikeys.Key{}, false
	}
	now := time.Now()
	k, ok, _ := s.keys.Find(r.Context(), now, func(k apikeys.Key) bool {
		return subtle.ConstantTimeCompare([]byte(keyToken(k.Digest)), []byte(c.Value)) == 1 && keyrule.State(k.Revoked, k.Expires, now) == keyrule.Active
	})
	return k, ok
}

// A browser signs in once by posting the admin key from the sign-in form
// (never in a URL, which history and access logs keep): the answer sets
// an HttpOnly, SameSite=Strict cookie holding a digest of the key (never
// the key) and sends the browser on to the page it asked for. The cookie
// is honoured for GET requests only: pages and their JSON, never a model
// request.
const sessionCookie = "meridian_session"

func browserToken(key [32]byte) string {
	sum := sha256.Sum256(append([]byte("meridian browser session\x00"), key[:]...))
	return hex.EncodeToString(sum[:])
}

func (s *access) cookieOK(r *http.Request) bool {
	// A console form posts with the cookie too; its handler refuses it
	// without the form's CSRF token.
	consoleForm := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/admin/")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !consoleForm {
		return false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	want := browserToken(s.admin)
	return subtle.ConstantTimeCompare([]byte(c.Value), []byte(want)) == 1
}

// anyKeyInForce says whether some key of `meridian key add` is active:
// model requests then need a key.
func (s *access) anyKeyInForce(r *http.Request) bool {
	if s.keys == nil {
		return false
	}
	now := time.Now()
	_, ok, _ := s.keys.Find(r.Context(), now, func(k apikeys.Key) bool {
		return keyrule.State(k.Revoked, k.Expires, now) == keyrule.Active
	})
	return ok
}

// keyOK: the request carries the admin key.
func (s *access) keyOK(r *http.Request) bool {
	key := presentedKey(r)
	if key == "" {
		return false
	}
	// Comparing fixed-size digests keeps the time independent of the key.
	d := digest(key)
	return subtle.ConstantTimeCompare(d[:], s.admin[:]) == 1
}

// isAdmin reports whether key is the admin key.
func (s *access) isAdmin(key string) bool {
	d := digest(key)
	return s.hasAdmin && subtle.ConstantTimeCompare(d[:], s.admin[:]) == 1
}
