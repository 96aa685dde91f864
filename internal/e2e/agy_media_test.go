package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaioption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// An image and a PDF in a request reach agy as files in the session's
// folder, named in the turn's text, which agy's view_file may read and
// nothing else may; an image of the history replays into a new
// conversation the same way; an image by URL is downloaded from a public
// address only (loopback, private and metadata addresses and redirects to
// them are refused, never fetched); plain http, an unknown media type and
// an oversized image are 400s naming the problem, and nothing runs.
func TestAntigravityReadsAttachedFiles(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "outside", "steps": []any{
			map[string]any{"type": "tool", "tool": "view_file", "params": map[string]any{"AbsolutePath": "/etc/hostname"}},
			agyAnswer("tried: {{tool_output}}\n", 10, 1)}},
		{"match": "[Attached", "steps": []any{
			map[string]any{"type": "tool", "tool": "view_file", "params": map[string]any{"AbsolutePath": "{{attachment}}"}},
			agyAnswer("saw: {{tool_output}}\n", 10, 1)}},
		{"steps": []any{agyAnswer("plain\n", 10, 1)}},
	}})
	png := []byte("\x89PNG\r\n\x1a\nnot really a picture")
	// An HTTPS host on 127.0.0.2, which the test's downloads file makes
	// stand for a public address, and one on loopback, which stays
	// refused; names resolve only as the file says.
	var insideHits atomic.Int32
	serveImages := func(ip string, hits *atomic.Int32) *httptest.Server {
		l, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hits != nil {
				hits.Add(1)
			}
			if to, ok := strings.CutPrefix(r.URL.Path, "/to/"); ok {
				http.Redirect(w, r, "https://"+to, http.StatusFound)
				return
			}
			_, _ = w.Write(png)
		}))
		srv.Listener.Close()
		srv.Listener = l
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	outside, inside := serveImages("127.0.0.2", nil), serveImages("127.0.0.1", &insideHits)
	port := func(s *httptest.Server) string {
		return s.Listener.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.x:"):]
	}
	spec, _ := json.Marshal(map[string]any{
		"resolve": map[string]string{"images.example.com": "127.0.0.2", "loop.example.com": "127.0.0.1",
			"private.example.com": "10.1.2.3", "metadata.example.com": "169.254.169.254"},
		"public": []string{"127.0.0.2"},
		"roots":  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: outside.Certificate().Raw})),
	})
	downloads := filepath.Join(t.TempDir(), "downloads.json")
	if err := os.WriteFile(downloads, spec, 0o600); err != nil {
		t.Fatal(err)
	}
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--test-downloads", downloads)
	ctx := context.Background()
	pdf := []byte("%PDF-1.4 a small document")
	sha := func(b []byte) string { return fmt.Sprintf("read %d bytes, sha256 %x", len(b), sha256.Sum256(b)) }
	image := sdk.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(png))
	ask := func(conversation string, msgs ...sdk.MessageParam) (*sdk.Message, error) {
		return g.client(conversation).Messages.New(ctx, sdk.MessageNewParams{Model: "gemini-3.8-flash-low", MaxTokens: 1024, Messages: msgs})
	}

	t.Run("an image", func(t *testing.T) {
		msg, err := ask("image", sdk.NewUserMessage(sdk.NewTextBlock("what is this?"), image))
		if err != nil {
			t.Fatal(err)
		}
		if got := msg.Content[0].Text; !strings.Contains(got, "saw: "+sha(png)) {
			t.Fatalf("agy's answer %q, want it to have read the image", got)
		}
	})

	t.Run("an image by URL", func(t *testing.T) {
		url := "https://images.example.com:" + port(outside) + "/cat.png"
		msg, err := ask("image-url", sdk.NewUserMessage(sdk.NewTextBlock("what is this?"), sdk.NewImageBlock(sdk.URLImageSourceParam{URL: url})))
		if err != nil || !strings.Contains(msg.Content[0].Text, "saw: "+sha(png)) {
			t.Fatalf("%v %+v", err, msg)
		}
		for _, refused := range []string{
			"https://loop.example.com:" + port(inside) + "/cat.png",
			"https://private.example.com/cat.png",
			"https://metadata.example.com/latest/meta-data",
			"https://127.0.0.1:" + port(inside) + "/cat.png",
			"https://images.example.com:" + port(outside) + "/to/loop.example.com:" + port(inside) + "/cat.png",
		} {
			_, err := ask("image-url-refused", sdk.NewUserMessage(sdk.NewTextBlock("look"), sdk.NewImageBlock(sdk.URLImageSourceParam{URL: refused})))
			var apiErr *sdk.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s: %v", refused, err)
			}
		}
		if n := insideHits.Load(); n != 0 {
			t.Fatalf("a loopback address was fetched %d times", n)
		}
	})

	t.Run("a pdf", func(t *testing.T) {
		doc := sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(pdf)})
		msg, err := ask("pdf", sdk.NewUserMessage(sdk.NewTextBlock("summarise"), doc))
		if err != nil || !strings.Contains(msg.Content[0].Text, "saw: "+sha(pdf)) {
			t.Fatalf("%v %+v", err, msg)
		}
	})

	t.Run("a pdf through the openai APIs", func(t *testing.T) {
		data := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)
		oc := openai.NewClient(oaioption.WithBaseURL(g.url+"/v1"), oaioption.WithAPIKey("client-key"), oaioption.WithMaxRetries(0))
		c, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-3.8-flash-low",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("summarise"),
				openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{FileData: openai.String(data), Filename: openai.String("notes.pdf")}),
			})}}, oaioption.WithHeader("X-Session-Id", "chat-pdf"))
		if err != nil || !strings.Contains(c.Choices[0].Message.Content, "saw: "+sha(pdf)) {
			t.Fatalf("chat: %v %+v", err, c)
		}
		r, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-3.8-flash-low",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
				responses.ResponseInputMessageContentListParam{
					{OfInputText: &responses.ResponseInputTextParam{Text: "summarise"}},
					{OfInputFile: &responses.ResponseInputFileParam{FileData: openai.String(data), Filename: openai.String("notes.pdf")}},
				}, responses.EasyInputMessageRoleUser)}}}, oaioption.WithHeader("X-Session-Id", "responses-pdf"))
		if err != nil || !strings.Contains(r.OutputText(), "saw: "+sha(pdf)) {
			t.Fatalf("responses: %v %+v", err, r)
		}
	})

	t.Run("a path outside", func(t *testing.T) {
		msg, err := ask("outside", sdk.NewUserMessage(sdk.NewTextBlock("read outside, and this"), image))
		if err != nil {
			t.Fatal(err)
		}
		if got := msg.Content[0].Text; strings.Contains(got, "read ") {
			t.Fatalf("a file that was not attached was read: %q", got)
		}
	})

	t.Run("a history image replays", func(t *testing.T) {
		msg, err := ask("history", sdk.NewUserMessage(sdk.NewTextBlock("look"), image),
			sdk.NewAssistantMessage(sdk.NewTextBlock("a picture")), sdk.NewUserMessage(sdk.NewTextBlock("and again")))
		if err != nil || !strings.Contains(msg.Content[0].Text, "saw: "+sha(png)) {
			t.Fatalf("%v %+v", err, msg)
		}
	})

	t.Run("refused", func(t *testing.T) {
		big := make([]byte, 21<<20)
		for name, block := range map[string]sdk.ContentBlockParamUnion{
			"plain http":   sdk.NewImageBlock(sdk.URLImageSourceParam{URL: "http://images.example.com/x.png"}),
			"oversized":    sdk.NewImageBlockBase64("image/png", base64.StdEncoding.EncodeToString(big)),
			"unknown type": sdk.NewImageBlockBase64("image/bmp", base64.StdEncoding.EncodeToString(png)),
		} {
			before := len(g.stdin())
			_, err := ask("refused-"+strings.ReplaceAll(name, " ", "-"), sdk.NewUserMessage(sdk.NewTextBlock("look"), block))
			var apiErr *sdk.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s: %v", name, err)
			}
			if n := len(g.stdin()); n != before {
				t.Fatalf("%s: agy was sent %d lines", name, n-before)
			}
		}
	})
}
