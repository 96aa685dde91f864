package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

// webSearchOf reads the web search server tool a request offers, if any:
// its name, the rules the backend can impose (domains, searches per
// response) and the options it cannot, which are reported ignored.
func webSearchOf(req *anthropic.MessagesRequest) (name string, ws *backend.WebSearch, unhonoured []string) {
	for _, raw := range req.Tools {
		var t struct {
			Type           string          `json:"type"`
			Name           string          `json:"name"`
			MaxUses        int             `json:"max_uses"`
			AllowedDomains []string        `json:"allowed_domains"`
			BlockedDomains []string        `json:"blocked_domains"`
			UserLocation   json.RawMessage `json:"user_location"`
		}
		if json.Unmarshal(raw, &t) != nil || !strings.HasPrefix(t.Type, "web_search_") {
			continue
		}
		ws = &backend.WebSearch{AllowedDomains: t.AllowedDomains, BlockedDomains: t.BlockedDomains, MaxUses: max(t.MaxUses, 0)}
		if len(t.UserLocation) > 0 && string(t.UserLocation) != "null" {
			unhonoured = append(unhonoured, "tools."+t.Name+".user_location")
		}
		return t.Name, ws, unhonoured
	}
	return "", nil, nil
}

// webSearch is the web search a turn runs with: the request's, when the
// backend can search.
func (g *Gateway) webSearch(req *anthropic.MessagesRequest) *backend.WebSearch {
	if _, ok := g.cfg.Backend.(backend.WebSearcher); !ok {
		return nil
	}
	_, ws, _ := webSearchOf(req)
	return ws
}

// SearchesWeb reports whether this gateway's backend can search the web.
func (g *Gateway) SearchesWeb() bool {
	_, ok := g.cfg.Backend.(backend.WebSearcher)
	return ok
}

// Ignored lists request parameters the backend cannot honour; they are
// reported to the client rather than silently pretended.
func (g *Gateway) Ignored(req *anthropic.MessagesRequest) []string {
	out := Ignored(req)
	if _, ok := g.cfg.Backend.(backend.WebSearcher); !ok {
		return out
	}
	name, ws, unhonoured := webSearchOf(req)
	if ws == nil {
		return out
	}
	for i, item := range out {
		rest, ok := strings.CutPrefix(item, "tools: ")
		if !ok {
			continue
		}
		names := slices.DeleteFunc(strings.Fields(rest), func(n string) bool { return n == name })
		if len(names) == 0 {
			out = slices.Delete(out, i, i+1)
		} else {
			out[i] = "tools: " + strings.Join(names, " ")
		}
		break
	}
	return append(out, unhonoured...)
}

// webSearchKey is the part of a session's contract its web search makes:
// the CLI's tool list and the rules its permission answers impose are
// fixed when it starts.
func webSearchKey(ws *backend.WebSearch) []string {
	if ws == nil {
		return nil
	}
	return []string{"web_search", strings.Join(ws.AllowedDomains, ","), strings.Join(ws.BlockedDomains, ","), strconv.Itoa(ws.MaxUses)}
}
