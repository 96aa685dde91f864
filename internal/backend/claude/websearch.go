package claude

import (
	"encoding/json"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
)

// The CLI's own web search tool: the only built-in tool a gateway session
// may enable. Its calls reach the client as the API's server tool blocks.
const (
	cliWebSearch    = "WebSearch"
	serverWebSearch = "web_search"
)

// directCaller says the model called the tool itself, as the API marks
// its server tool blocks.
const directCaller = `{"type":"direct"}`

// maxUsesExceeded is the API's error code for a search past the client's
// bound, and the denial's message that carries it to the translator.
const maxUsesExceeded = "max_uses_exceeded"

// searchPermission answers the CLI's request to run a web search: allowed
// under the client's domain rules, which replace whatever the model asked
// for, and denied past the client's bound on searches per response.
func (p *Process) searchPermission(input json.RawMessage) (allow bool, updated json.RawMessage) {
	ws := p.search
	p.mu.Lock()
	p.searches++
	n := p.searches
	p.mu.Unlock()
	if ws.MaxUses > 0 && n > ws.MaxUses {
		return false, nil
	}
	var in map[string]any
	if json.Unmarshal(input, &in) != nil || in == nil {
		in = map[string]any{}
	}
	if len(ws.AllowedDomains) > 0 {
		in["allowed_domains"] = ws.AllowedDomains
	}
	if len(ws.BlockedDomains) > 0 {
		in["blocked_domains"] = ws.BlockedDomains
	}
	out, err := json.Marshal(in)
	if err != nil {
		return false, nil
	}
	return true, out
}

// serverToolUse renders the CLI's WebSearch call as the API's
// server_tool_use block, keeping its id and input.
func serverToolUse(block json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(block, &m) != nil {
		return block
	}
	m["type"] = json.RawMessage(`"server_tool_use"`)
	m["name"] = json.RawMessage(`"` + serverWebSearch + `"`)
	m["caller"] = json.RawMessage(directCaller)
	out, err := json.Marshal(m)
	if err != nil {
		return block
	}
	return out
}

// searchOutcome is the CLI's record of one search (a user line's
// tool_use_result): each result group's titles and URLs, then the search
// answer's text, or an error's text in place of a group.
type searchOutcome struct {
	Results     []json.RawMessage `json:"results"`
	SearchCount int               `json:"searchCount"`
}

type searchLink struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// searchResult builds the web_search_tool_result block for search call id
// from what the CLI kept of it: titles and URLs only (the CLI drops the
// pages' encrypted content and their age, so those are empty), or the
// error it met. It also returns how many searches the CLI ran.
func searchResult(id string, outcome json.RawMessage, isError bool, text string) (json.RawMessage, int) {
	var o searchOutcome
	_ = json.Unmarshal(outcome, &o)
	type result struct {
		Type             string  `json:"type"`
		URL              string  `json:"url"`
		Title            string  `json:"title"`
		EncryptedContent string  `json:"encrypted_content"`
		PageAge          *string `json:"page_age"`
	}
	results := []result{}
	code := ""
	for _, raw := range o.Results {
		var group struct {
			Content []searchLink `json:"content"`
		}
		if json.Unmarshal(raw, &group) == nil && group.Content != nil {
			for _, l := range group.Content {
				results = append(results, result{Type: "web_search_result", URL: l.URL, Title: l.Title})
			}
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if c, ok := strings.CutPrefix(s, "Web search error: "); ok {
				code = strings.TrimSpace(c)
			}
		}
	}
	if isError && code == "" {
		code = "unavailable"
		if strings.Contains(text, maxUsesExceeded) {
			code = maxUsesExceeded
		}
	}
	block := map[string]any{"type": "web_search_tool_result", "tool_use_id": id, "caller": json.RawMessage(directCaller)}
	if code != "" && len(results) == 0 {
		block["content"] = map[string]string{"type": "web_search_tool_result_error", "error_code": code}
	} else {
		block["content"] = results
	}
	out, _ := json.Marshal(block)
	return out, o.SearchCount
}

// searchResults emits the result blocks of the searches a CLI user line
// answers: whole, as the API streams them.
func (t *translator) searchResults(l *line) error {
	if len(t.searchIDs) == 0 {
		return nil
	}
	var msg struct {
		Content []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
	}
	if json.Unmarshal(l.Message, &msg) != nil {
		return nil
	}
	for _, b := range msg.Content {
		if b.Type != "tool_result" || !t.searchIDs[b.ToolUseID] {
			continue
		}
		delete(t.searchIDs, b.ToolUseID)
		block, n := searchResult(b.ToolUseID, l.ToolUseResult, b.IsError, toolResultText(b.Content))
		if n == 0 && !b.IsError {
			n = 1
		}
		t.searches += n
		idx := t.next
		t.next++
		t.ev = backend.Event{Kind: backend.BlockStart, Index: idx, BlockType: "web_search_tool_result", Block: block}
		if err := t.emit(&t.ev); err != nil {
			return err
		}
		t.ev = backend.Event{Kind: backend.BlockStop, Index: idx}
		if err := t.emit(&t.ev); err != nil {
			return err
		}
	}
	return nil
}

// toolResultText is a tool result's text, as a string or text blocks.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// webSearchArgs is the CLI's tool list for a session: none, or only its
// web search.
func webSearchArgs(ws *backend.WebSearch) string {
	if ws == nil {
		return "--tools="
	}
	return "--tools=" + cliWebSearch
}
