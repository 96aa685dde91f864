package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/meridian-gw/meridian/internal/testkit"
)

// searchQueryPrefix opens the request the CLI's WebSearch tool sends.
const searchQueryPrefix = "Perform a web search for the query: "

// searchUpstream answers as the API would with web search: the CLI's
// own search request (the web_search server tool) gets results; a model
// asked to search calls whichever search tool it is offered (the CLI's
// WebSearch, or a client's, as Claude Code's reaches Meridian's CLI), and
// once it has results names the first one's title, if it got it.
func searchUpstream(r testkit.Request) testkit.Reply {
	if r.ServerTool("web_search") != nil {
		q := strings.TrimPrefix(r.LastUserText(), searchQueryPrefix)
		return testkit.Reply{Search: &testkit.Search{Query: q, Results: []testkit.SearchResult{
			{Title: "Meridian 2 release notes", URL: "https://news.example/meridian-2"},
			{Title: "Gateways compared", URL: "https://news.example/gateways"},
		}}, Text: "Meridian 2 shipped."}
	}
	all, last := r.AllText(), r.LastUserText()
	switch {
	case strings.Contains(all, "Web search results for query") && strings.Contains(all, "Meridian 2 release notes"):
		return testkit.Reply{Text: "Meridian 2 shipped, says [Meridian 2 release notes](https://news.example/meridian-2)."}
	case strings.Contains(last, "search the web") || strings.Contains(last, searchQueryPrefix):
		q := strings.TrimPrefix(last, searchQueryPrefix)
		for _, name := range []string{"WebSearch", "mcp__c__WebSearch"} {
			if r.Offers(name) {
				return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: name, Input: map[string]any{"query": q}}}}
			}
		}
	}
	return testkit.Reply{Text: "answer to " + last}
}

// lastSearch is the web_search server tool of the CLI's latest search
// request, as JSON; the test fails when the upstream saw none.
func lastSearch(t *testing.T, up *testkit.Upstream) string {
	t.Helper()
	var tool map[string]any
	for _, r := range up.Requests() {
		if st := r.ServerTool("web_search"); st != nil {
			tool = st
		}
	}
	if tool == nil {
		t.Fatal("the upstream never saw a search")
	}
	b, _ := json.Marshal(tool)
	return string(b)
}

// A Messages request offering web search is answered by the CLI's own
// search, under the client's domains, with the API's server tool blocks:
// the call, its results' titles and URLs, and the count in usage; JSON
// and SSE both parse as the SDK's typed blocks.
func TestWebSearchOnMessages(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(searchUpstream)
	g.start()
	client := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("any"), option.WithMaxRetries(0))
	params := func(conversation string) (sdk.MessageNewParams, []option.RequestOption) {
		return sdk.MessageNewParams{
			Model: "test-model", MaxTokens: 200,
			Tools: []sdk.ToolUnionParam{{OfWebSearchTool20250305: &sdk.WebSearchTool20250305Param{
				MaxUses: sdk.Int(3), AllowedDomains: []string{"news.example"}}}},
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("search the web for the meridian release"))},
		}, []option.RequestOption{option.WithHeader("X-Claude-Code-Session-Id", conversation)}
	}
	check := func(t *testing.T, msg *sdk.Message) {
		t.Helper()
		var types []string
		for _, b := range msg.Content {
			types = append(types, b.Type)
		}
		if !slices.Equal(types, []string{"server_tool_use", "web_search_tool_result", "text"}) {
			t.Fatalf("content %v: %s", types, msg.RawJSON())
		}
		call := msg.Content[0].AsServerToolUse()
		result := msg.Content[1].AsWebSearchToolResult()
		if call.Name != "web_search" || result.ToolUseID != call.ID {
			t.Fatalf("call %+v, result for %q", call, result.ToolUseID)
		}
		pages := result.Content.OfWebSearchResultBlockArray
		if len(pages) != 2 || pages[0].Title != "Meridian 2 release notes" || pages[0].URL != "https://news.example/meridian-2" {
			t.Fatalf("results %+v", pages)
		}
		if !strings.Contains(msg.Content[2].Text, "Meridian 2 shipped") {
			t.Fatalf("text %q", msg.Content[2].Text)
		}
		if msg.Usage.ServerToolUse.WebSearchRequests != 1 {
			t.Fatalf("usage %s", msg.Usage.RawJSON())
		}
	}

	t.Run("json", func(t *testing.T) {
		p, opts := params("search-json")
		var resp *http.Response
		msg, err := client.Messages.New(context.Background(), p, append(opts, option.WithResponseInto(&resp))...)
		if err != nil {
			t.Fatal(err)
		}
		check(t, msg)
		if ignored := resp.Header.Get("X-Meridian-Ignored-Params"); strings.Contains(ignored, "web_search") {
			t.Fatalf("web search reported ignored: %q", ignored)
		}
		// The client echoes the blocks in its next turn, which the live
		// process continues.
		p.Messages = append(p.Messages, msg.ToParam(), sdk.NewUserMessage(sdk.NewTextBlock("thanks")))
		if _, err := client.Messages.New(context.Background(), p, opts...); err != nil {
			t.Fatal(err)
		}
		if !g.logShows("conversation=search-json client=claude-code verdict=continuation live=true") {
			t.Fatalf("the next turn did not continue on the live process:\n%s", g.log.String())
		}
		if tool := lastSearch(t, g.up); !strings.Contains(tool, `"allowed_domains":["news.example"]`) {
			t.Fatalf("the client's domains did not reach the search: %s", tool)
		}
	})

	t.Run("sse", func(t *testing.T) {
		p, opts := params("search-sse")
		stream := client.Messages.NewStreaming(context.Background(), p, opts...)
		var msg sdk.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, &msg)
	})
}

// Claude Code pointed at Meridian and asked to search: its WebSearch
// tool's own request (only the web_search server tool) reaches Meridian,
// which searches through its CLI; Claude Code reads the results and its
// answer names a result's title.
func TestClaudeCodeSearchesThroughMeridian(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(searchUpstream)
	g.start()
	home := t.TempDir()
	config := filepath.Join(home, "config")
	if err := os.MkdirAll(config, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, ".claude.json"),
		[]byte(`{"hasCompletedOnboarding":true,"customApiKeyResponses":{"approved":["any-client-key"],"rejected":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testkit.ClaudePath(t), "--model", "claude-sonnet-4-5", "-p", "search the web for the meridian release", "--allowedTools", "WebSearch")
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CLAUDE_CONFIG_DIR=" + config, "ANTHROPIC_BASE_URL=" + g.url,
		"ANTHROPIC_API_KEY=any-client-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_MAX_RETRIES=0",
		// WebSearch offered outright, not behind Claude Code's tool search.
		"ENABLE_TOOL_SEARCH=false"}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Meridian 2 release notes") {
		for _, r := range g.up.Requests() {
			tools, _ := r.Body["tools"].([]any)
			var names []string
			for _, tl := range tools {
				tm, _ := tl.(map[string]any)
				names = append(names, fmt.Sprint(tm["name"]))
			}
			t.Logf("upstream request tools %v", names)
		}
		t.Fatalf("claude -p: %v\n%s\nmeridian:\n%s", err, out, g.log.String())
	}
	lastSearch(t, g.up)
	// The search request, sent under the session's id, is served on its
	// own: the turn that waits for it continues on its live process.
	if !regexp.MustCompile(`msg="turn done".*client=claude-code verdict=continuation live=true`).MatchString(g.log.String()) {
		t.Fatalf("the turn that called WebSearch did not continue on its live process:\n%s", g.log.String())
	}
}

// A chat completion with web_search_options searches through the CLI and
// cites, as url_citation annotations, the found pages its text names:
// in the completion and at the end of its stream.
func TestWebSearchOnChatCompletions(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(searchUpstream)
	g.start()
	client := g.openai()
	params := openai.ChatCompletionNewParams{
		Model:            "test-model",
		Messages:         []openai.ChatCompletionMessageParamUnion{openai.UserMessage("search the web for the meridian release")},
		WebSearchOptions: openai.ChatCompletionNewParamsWebSearchOptions{SearchContextSize: "low"},
	}
	const url = "https://news.example/meridian-2"

	t.Run("json", func(t *testing.T) {
		var resp *http.Response
		c, err := client.Chat.Completions.New(context.Background(), params, oaioption.WithResponseInto(&resp),
			oaioption.WithHeader("X-Session-Id", "chat-search"))
		if err != nil {
			t.Fatal(err)
		}
		msg := c.Choices[0].Message
		if len(msg.Annotations) != 1 {
			t.Fatalf("annotations %+v in %s", msg.Annotations, c.RawJSON())
		}
		a := msg.Annotations[0].URLCitation
		if a.URL != url || a.Title != "Meridian 2 release notes" || msg.Content[a.StartIndex:a.EndIndex] != url {
			t.Fatalf("citation %+v of %q", a, msg.Content)
		}
		if got := resp.Header.Get("X-Meridian-Ignored-Params"); got != "web_search_options.search_context_size" {
			t.Fatalf("ignored %q", got)
		}
	})

	t.Run("stream", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(context.Background(), params, oaioption.WithHeader("X-Session-Id", "chat-search-stream"))
		var acc openai.ChatCompletionAccumulator
		var annotations string
		for stream.Next() {
			chunk := stream.Current()
			acc.AddChunk(chunk)
			if len(chunk.Choices) > 0 {
				if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["annotations"]; ok {
					annotations = f.Raw()
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		var cites []openai.ChatCompletionMessageAnnotation
		if err := json.Unmarshal([]byte(annotations), &cites); err != nil || len(cites) != 1 {
			t.Fatalf("annotations %q: %v", annotations, err)
		}
		text := acc.Choices[0].Message.Content
		if a := cites[0].URLCitation; a.URL != url || text[a.StartIndex:a.EndIndex] != url {
			t.Fatalf("citation %+v of %q", a, text)
		}
	})
}

// A Responses request offering web_search gets a web_search_call item
// (its query) and a message whose output text cites the found pages it
// names, whole and streamed; the allowed domains reach the search.
func TestWebSearchOnResponses(t *testing.T) {
	t.Parallel()
	g := newGateway(t)
	g.up.Respond(searchUpstream)
	g.start()
	client := g.openai()
	params := responses.ResponseNewParams{
		Model: "test-model",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("search the web for the meridian release")},
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch,
			Filters: responses.WebSearchToolFiltersParam{AllowedDomains: []string{"news.example"}}}}},
	}
	check := func(t *testing.T, r *responses.Response) {
		t.Helper()
		var kinds []string
		for _, it := range r.Output {
			kinds = append(kinds, it.Type)
		}
		if !slices.Equal(kinds, []string{"web_search_call", "message"}) {
			t.Fatalf("output %v: %s", kinds, r.RawJSON())
		}
		call := r.Output[0].AsWebSearchCall()
		if call.Status != "completed" || call.Action.Type != "search" || call.Action.Query != "search the web for the meridian release" {
			t.Fatalf("call %+v", call)
		}
		text := r.Output[1].Content[0]
		if len(text.Annotations) != 1 {
			t.Fatalf("annotations of %s", r.RawJSON())
		}
		a := text.Annotations[0]
		if a.Type != "url_citation" || a.URL != "https://news.example/meridian-2" || a.Title != "Meridian 2 release notes" ||
			text.Text[a.StartIndex:a.EndIndex] != a.URL {
			t.Fatalf("citation %+v of %q", a, text.Text)
		}
	}

	t.Run("json", func(t *testing.T) {
		r, err := client.Responses.New(context.Background(), params, oaioption.WithHeader("X-Session-Id", "responses-search"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, r)
		if tool := lastSearch(t, g.up); !strings.Contains(tool, `"allowed_domains":["news.example"]`) {
			t.Fatalf("the client's domains did not reach the search: %s", tool)
		}
	})

	t.Run("stream", func(t *testing.T) {
		stream := client.Responses.NewStreaming(context.Background(), params, oaioption.WithHeader("X-Session-Id", "responses-search-stream"))
		var final *responses.Response
		var searching bool
		for stream.Next() {
			ev := stream.Current()
			searching = searching || ev.Type == "response.web_search_call.searching"
			if ev.Type == "response.completed" {
				r := ev.AsResponseCompleted().Response
				final = &r
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if final == nil || !searching {
			t.Fatalf("no completed response (searching event seen: %v)", searching)
		}
		check(t, final)
	})
}

// Searches past the client's max_uses, and a search the API itself
// fails, come back as the API's error blocks; a search and a client tool
// in one turn pause for the client's tool with the search's blocks kept;
// web fetch, which the CLI would run from this machine, stays off and a
// loopback page it names is never fetched.
func TestWebSearchLimitsToolsAndFetch(t *testing.T) {
	t.Parallel()
	fetched := make(chan string, 4)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fetched <- r.URL.Path }))
	defer page.Close()
	g := newGateway(t)
	g.up.Respond(func(r testkit.Request) testkit.Reply {
		all, last := r.AllText(), r.LastUserText()
		switch {
		case r.ServerTool("web_search") != nil && strings.Contains(last, "broken"):
			return testkit.Reply{Search: &testkit.Search{Query: "broken", Error: "too_many_requests"}}
		case r.ServerTool("web_search") != nil:
			return testkit.Reply{Search: &testkit.Search{Query: last, Results: []testkit.SearchResult{{Title: "A page", URL: "https://news.example/a"}}}}
		case strings.Contains(all, "twice") && strings.Count(all, "Web search") < 2:
			return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: "WebSearch", Input: map[string]any{"query": "twice"}}}}
		case strings.Contains(all, "broken search") && !strings.Contains(all, "Web search"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: "WebSearch", Input: map[string]any{"query": "broken"}}}}
		case strings.Contains(all, "then run a tool") && !strings.Contains(all, "Web search"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: "WebSearch", Input: map[string]any{"query": "tool"}}}}
		case strings.Contains(all, "then run a tool") && !strings.Contains(all, "ran fine"):
			return testkit.Reply{ToolUses: []testkit.ToolUse{{Name: "mcp__c__run", Input: map[string]any{}}}}
		}
		return testkit.Reply{Text: "done"}
	})
	g.start()
	client := sdk.NewClient(option.WithBaseURL(g.url), option.WithAPIKey("any"), option.WithMaxRetries(0))
	search := sdk.ToolUnionParam{OfWebSearchTool20250305: &sdk.WebSearchTool20250305Param{MaxUses: sdk.Int(1)}}
	ask := func(conversation, prompt string, tools ...sdk.ToolUnionParam) (*sdk.Message, *http.Response) {
		t.Helper()
		var resp *http.Response
		msg, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 200, Tools: tools,
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(prompt))}},
			option.WithHeader("X-Claude-Code-Session-Id", conversation), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		return msg, resp
	}
	searchErrors := func(msg *sdk.Message) (codes []string) {
		for _, b := range msg.Content {
			if b.Type == "web_search_tool_result" {
				codes = append(codes, string(b.AsWebSearchToolResult().Content.ErrorCode))
			}
		}
		return codes
	}

	t.Run("max_uses", func(t *testing.T) {
		msg, _ := ask("twice", "search twice", search)
		if got := searchErrors(msg); !slices.Equal(got, []string{"", "max_uses_exceeded"}) {
			t.Fatalf("search results %q: %s", got, msg.RawJSON())
		}
		if msg.Usage.ServerToolUse.WebSearchRequests != 1 {
			t.Fatalf("usage %s", msg.Usage.RawJSON())
		}
	})

	t.Run("the API's error", func(t *testing.T) {
		msg, _ := ask("broken", "a broken search", search)
		if got := searchErrors(msg); !slices.Equal(got, []string{"too_many_requests"}) {
			t.Fatalf("search results %q: %s", got, msg.RawJSON())
		}
	})

	t.Run("a search and a client tool", func(t *testing.T) {
		run := sdk.ToolUnionParam{OfTool: &sdk.ToolParam{Name: "run", InputSchema: sdk.ToolInputSchemaParam{Properties: map[string]any{}}}}
		msg, _ := ask("both", "search, then run a tool", search, run)
		var types []string
		for _, b := range msg.Content {
			types = append(types, b.Type)
		}
		if msg.StopReason != "tool_use" || !slices.Equal(types, []string{"server_tool_use", "web_search_tool_result", "tool_use"}) {
			t.Fatalf("stop %s, content %v: %s", msg.StopReason, types, msg.RawJSON())
		}
		call := msg.Content[2].AsToolUse()
		next, err := client.Messages.New(context.Background(), sdk.MessageNewParams{Model: "test-model", MaxTokens: 200, Tools: []sdk.ToolUnionParam{search, run},
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("search, then run a tool")), msg.ToParam(),
				sdk.NewUserMessage(sdk.NewToolResultBlock(call.ID, "ran fine", false))}},
			option.WithHeader("X-Claude-Code-Session-Id", "both"))
		if err != nil || len(next.Content) == 0 || next.Content[len(next.Content)-1].Text != "done" {
			t.Fatalf("the tool's result: %v %+v", err, next)
		}
		if !g.logShows("conversation=both client=claude-code verdict=continuation live=true") {
			t.Fatal("the tool's result did not continue the paused process")
		}
	})

	t.Run("web fetch stays off", func(t *testing.T) {
		fetch := sdk.ToolUnionParam{OfWebFetchTool20250910: &sdk.WebFetchTool20250910Param{}}
		_, resp := ask("fetch", "fetch "+page.URL+"/secret", fetch)
		if got := resp.Header.Get("X-Meridian-Ignored-Params"); !strings.Contains(got, "web_fetch") {
			t.Fatalf("web fetch not reported ignored: %q", got)
		}
		select {
		case p := <-fetched:
			t.Fatalf("the loopback page %s was fetched", p)
		default:
		}
	})
}
