package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/console"
	"github.com/meridian-gw/meridian/internal/gateway"
)

// adminRoutes are the operator's console as JSON (admin only): every
// change the console's pages make, for scripts. The pages call the same
// console.
type adminRoutes struct {
	console *console.Console // nil: 404, this server has no console
	log     *slog.Logger
}

// maxAdminBody bounds an admin request's body.
const maxAdminBody = 64 << 10

// adminError is a console error as the client sees it: what does not
// exist is 404, what exists already 409, a store that failed 503, and
// anything else the request's to fix, 400; local paths are redacted.
func adminError(err error) *gateway.Error {
	msg := gateway.Redact(err.Error())
	switch {
	case console.NotFound(err):
		return &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: msg}
	case console.Exists(err):
		return &gateway.Error{Status: http.StatusConflict, Type: anthropic.ErrInvalidRequest, Message: msg}
	case strings.HasPrefix(msg, "store: "):
		return gateway.StoreUnavailable("change that")
	}
	return gateway.InvalidRequest(msg)
}

// on answers 404 where no console is wired.
func (a *adminRoutes) on(w http.ResponseWriter, r *http.Request) bool {
	if a.console == nil {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "this meridian has no operator's console"})
		return false
	}
	return true
}

// decode reads a JSON body into v, naming the fields it set.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) (set []string, ok bool) {
	body := http.MaxBytesReader(w, r.Body, maxAdminBody)
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(body).Decode(&raw); err != nil {
		writeError(w, r, gateway.InvalidRequest("the body is a JSON object: "+err.Error()))
		return nil, false
	}
	for k := range raw {
		set = append(set, k)
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, v); err != nil {
		writeError(w, r, gateway.InvalidRequest("the body's fields: "+err.Error()))
		return nil, false
	}
	return set, true
}

// answer writes v, or the console's error.
func (a *adminRoutes) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err != nil {
		ge := adminError(err)
		if ge.Status >= 500 {
			a.log.Error("console: a change failed", "path", r.URL.Path, "err", err)
		}
		writeError(w, r, ge)
		return
	}
	writeJSON(w, status, v)
}

func (a *adminRoutes) keys(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		keys, err := a.console.Keys(r.Context())
		a.answer(w, r, http.StatusOK, map[string]any{"keys": keys}, err)
	}
}

func (a *adminRoutes) addKey(w http.ResponseWriter, r *http.Request) {
	var f console.KeyForm
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &f); ok {
		v, err := a.console.AddKey(r.Context(), f)
		a.answer(w, r, http.StatusCreated, v, err)
	}
}

func (a *adminRoutes) setKey(w http.ResponseWriter, r *http.Request) {
	var f console.KeyForm
	if !a.on(w, r) {
		return
	}
	set, ok := decodeAdmin(w, r, &f)
	if ok {
		f.Set = set
		v, err := a.console.SetKey(r.Context(), r.PathValue("name"), f)
		a.answer(w, r, http.StatusOK, v, err)
	}
}

func (a *adminRoutes) revokeKey(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		v, err := a.console.RevokeKey(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, v, err)
	}
}

func (a *adminRoutes) rotateKey(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		v, err := a.console.RotateKey(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, v, err)
	}
}

func (a *adminRoutes) profiles(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		ps, err := a.console.Profiles()
		a.answer(w, r, http.StatusOK, map[string]any{"profiles": ps}, err)
	}
}

func (a *adminRoutes) addProfile(w http.ResponseWriter, r *http.Request) {
	var f console.ProfileForm
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &f); ok {
		login, err := a.console.AddProfile(f)
		a.answer(w, r, http.StatusCreated, map[string]any{"profile": f.Name, "login": login}, err)
	}
}

func (a *adminRoutes) setProfile(w http.ResponseWriter, r *http.Request) {
	var ch console.ProfileChange
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &ch); ok {
		err := a.console.SetProfile(r.PathValue("name"), ch)
		a.answer(w, r, http.StatusOK, map[string]string{"profile": r.PathValue("name")}, err)
	}
}

func (a *adminRoutes) removeProfile(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		err := a.console.RemoveProfile(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, map[string]string{"removed": r.PathValue("name")}, err)
	}
}

func (a *adminRoutes) startLogin(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		v, err := a.console.StartLogin(r.PathValue("name"))
		a.answer(w, r, http.StatusCreated, v, err)
	}
}

func (a *adminRoutes) login(w http.ResponseWriter, r *http.Request) {
	if !a.on(w, r) {
		return
	}
	v, ok := a.console.Login(r.PathValue("id"))
	if !ok {
		writeError(w, r, &gateway.Error{Status: http.StatusNotFound, Type: anthropic.ErrNotFound, Message: "no such login: it ended, or this host did not start it"})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *adminRoutes) loginCode(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Code string `json:"code"`
	}
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &body); ok {
		v, err := a.console.LoginCode(r.PathValue("id"), body.Code)
		a.answer(w, r, http.StatusOK, v, err)
	}
}

func (a *adminRoutes) sinks(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		sinks, err := a.console.Sinks(r.Context())
		a.answer(w, r, http.StatusOK, map[string]any{"sinks": sinks}, err)
	}
}

func (a *adminRoutes) addSink(w http.ResponseWriter, r *http.Request) {
	var body struct{ Name, URL, Format string }
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &body); ok {
		secret, err := a.console.AddSink(r.Context(), body.Name, body.URL, body.Format)
		a.answer(w, r, http.StatusCreated, map[string]string{"name": body.Name, "secret": secret}, err)
	}
}

func (a *adminRoutes) removeSink(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		err := a.console.RemoveSink(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, map[string]string{"removed": r.PathValue("name")}, err)
	}
}

func (a *adminRoutes) testSink(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		err := a.console.TestSink(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, map[string]string{"tested": r.PathValue("name")}, err)
	}
}

func (a *adminRoutes) aliases(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		list, err := a.console.Aliases(r.Context())
		a.answer(w, r, http.StatusOK, map[string]any{"aliases": list}, err)
	}
}

func (a *adminRoutes) addAlias(w http.ResponseWriter, r *http.Request) {
	var body struct{ Name, Model, Effort string }
	if !a.on(w, r) {
		return
	}
	if _, ok := decodeAdmin(w, r, &body); ok {
		err := a.console.AddAlias(r.Context(), body.Name, body.Model, body.Effort)
		a.answer(w, r, http.StatusCreated, map[string]string{"name": body.Name, "model": body.Model, "effort": body.Effort}, err)
	}
}

func (a *adminRoutes) removeAlias(w http.ResponseWriter, r *http.Request) {
	if a.on(w, r) {
		err := a.console.RemoveAlias(r.Context(), r.PathValue("name"))
		a.answer(w, r, http.StatusOK, map[string]string{"removed": r.PathValue("name")}, err)
	}
}
