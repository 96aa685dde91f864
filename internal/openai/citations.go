package openai

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/meridian-gw/meridian/internal/anthropic"
)

// webSearchTool is the Messages API server tool an OpenAI request's web
// search becomes.
const webSearchTool = `{"type":"web_search_20250305","name":"web_search"}`

// SearchPage is one page a web search found: what the backend kept of it.
type SearchPage struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

// searchPages reads the pages of a web_search_tool_result block (none for
// any other block, or a search that failed).
func searchPages(block json.RawMessage) []SearchPage {
	var b struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(block, &b) != nil || b.Type != anthropic.BlockWebSearchToolResult {
		return nil
	}
	var pages []SearchPage
	_ = json.Unmarshal(b.Content, &pages)
	return pages
}

// Citation is a URL the answer's text names that a search found, with
// where it stands in the text, in characters (code points), end exclusive.
type Citation struct {
	Start, End int
	URL, Title string
}

// citations finds, for each page searched, where the text names its URL.
// Nothing is cited that the text does not name: the backend keeps no
// citations of its own.
func citations(text string, pages []SearchPage) []Citation {
	var out []Citation
	seen := map[string]bool{}
	for _, p := range pages {
		if p.URL == "" || seen[p.URL] {
			continue
		}
		seen[p.URL] = true
		for from := 0; ; {
			i := strings.Index(text[from:], p.URL)
			if i < 0 {
				break
			}
			at := from + i
			start := utf8.RuneCountInString(text[:at])
			out = append(out, Citation{Start: start, End: start + utf8.RuneCountInString(p.URL), URL: p.URL, Title: p.Title})
			from = at + len(p.URL)
		}
	}
	return out
}

// chatAnnotation is a citation as chat completions show it.
type chatAnnotation struct {
	Type        string `json:"type"`
	URLCitation struct {
		StartIndex int    `json:"start_index"`
		EndIndex   int    `json:"end_index"`
		URL        string `json:"url"`
		Title      string `json:"title"`
	} `json:"url_citation"`
}

func chatAnnotations(cs []Citation) []chatAnnotation {
	out := make([]chatAnnotation, len(cs))
	for i, c := range cs {
		out[i].Type = "url_citation"
		out[i].URLCitation.StartIndex, out[i].URLCitation.EndIndex = c.Start, c.End
		out[i].URLCitation.URL, out[i].URLCitation.Title = c.URL, c.Title
	}
	return out
}
