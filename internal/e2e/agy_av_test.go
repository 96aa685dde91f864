package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// makeMedia has ffmpeg make a file from a generated source.
func makeMedia(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("ffmpeg", append(append([]string{"-nostdin", "-v", "error", "-y"}, args...), path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", name, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A 3-second WAV (an input_audio part) reaches agy as the transcript the
// configured transcriber printed for it, converted to 16 kHz mono first;
// a 2-second MP4 (a file part) as two frames, which agy's view_file may
// read. A 2-hour video, a file over the bound and a malformed one are 400s
// naming the part (a playlist posing as a video among them: ffmpeg reads
// a part only as its own type), and agy is given nothing.
func TestAntigravityAudioAndVideo(t *testing.T) {
	t.Parallel()
	g := newAgyGateway(t, map[string]any{"turns": []map[string]any{
		{"match": "[Attached video", "steps": []any{
			map[string]any{"type": "tool", "tool": "view_file", "params": map[string]any{"AbsolutePath": "{{attachment}}"}},
			agyAnswer("saw: {{tool_output}}\n", 10, 1)}},
		{"steps": []any{agyAnswer("heard it\n", 10, 1)}},
	}})
	transcriber := filepath.Join(t.TempDir(), "transcribe")
	// It reports what it was given: the size of a 16 kHz mono 16-bit WAV.
	if err := os.WriteFile(transcriber, []byte("#!/bin/sh\necho \"heard $(wc -c < \"$1\") bytes of speech\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g.gatewayProc.start("--backend", "antigravity", "--agy-path", g.agy, "--transcriber", transcriber)
	wav := makeMedia(t, "tone.wav", "-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-ar", "44100")
	mp4 := makeMedia(t, "clip.mp4", "-f", "lavfi", "-i", "testsrc=duration=2:size=64x64:rate=10", "-c:v", "mpeg4", "-pix_fmt", "yuv420p")
	long := makeMedia(t, "long.mp4", "-f", "lavfi", "-i", "color=c=black:s=16x16:r=1:d=7200", "-c:v", "mpeg4", "-pix_fmt", "yuv420p")
	ctx := context.Background()
	c := openai.NewClient(oaoption.WithBaseURL(g.url+"/v1"), oaoption.WithAPIKey("client-key"), oaoption.WithMaxRetries(0))
	ask := func(parts ...openai.ChatCompletionContentPartUnionParam) (*openai.ChatCompletion, error) {
		return c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gemini-3.8-flash-low",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(append([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is in this?")}, parts...))}})
	}
	file := func(mediaType string, data []byte) openai.ChatCompletionContentPartUnionParam {
		return openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
			FileData: openai.String("data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)), Filename: openai.String("clip")})
	}

	audio, err := ask(openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{
		Data: base64.StdEncoding.EncodeToString(wav), Format: "wav"}))
	if err != nil || audio.Choices[0].Message.Content != "heard it\n" {
		t.Fatalf("audio: %v %+v\n%s", err, audio, g.log.String())
	}
	in := g.stdin()
	if !strings.Contains(in[len(in)-1], `Attached audio (audio/wav, 3.0 s). Its transcript:\nheard 96044 bytes of speech\n(end of the transcript)`) {
		t.Fatalf("the audio reached agy as %s", in[len(in)-1])
	}

	video, err := ask(file("video/mp4", mp4))
	if err != nil || !strings.HasPrefix(video.Choices[0].Message.Content, "saw: read ") {
		t.Fatalf("video: %v %+v", err, video)
	}
	in = g.stdin()
	if last := in[len(in)-1]; !strings.Contains(last, `Attached video \"clip\" (video/mp4, 2.0 s) as 2 frames, one every 1.0 s: `) ||
		strings.Count(last, ".png") != 2 || strings.Contains(last, "sound track") {
		t.Fatalf("the video reached agy as %s", last)
	}

	refused := func(what string, err error, mention string) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, mention) {
			t.Fatalf("%s: %v, want a 400 mentioning %q", what, err, mention)
		}
	}
	before := len(g.stdin())
	_, err = ask(file("video/mp4", long))
	refused("a 2-hour video", err, "the video part (content block 1) is 2h0m0s long; agy is given at most 15m0s")
	_, err = ask(file("audio/wav", make([]byte, 21<<20)))
	refused("a file over the bound", err, "the audio part (content block 1) is larger than 20 MiB")
	_, err = ask(file("video/mp4", []byte("this is not a video at all")))
	refused("a malformed video", err, "the video part (content block 1) could not be read as mov")
	// A playlist that names another file does not parse as the type it
	// claims: ffmpeg never follows it.
	_, err = ask(file("video/mp4", []byte("#EXTM3U\n#EXTINF:1,\nfile:///etc/hostname\n#EXT-X-ENDLIST\n")))
	refused("a playlist posing as a video", err, "could not be read as mov")
	// Responses takes the same parts (input_file).
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "gemini-3.8-flash-low", Input: responses.ResponseNewParamsInputUnion{
		OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputFile: &responses.ResponseInputFileParam{FileData: openai.String("data:video/mp4;base64," + base64.StdEncoding.EncodeToString(long))}},
		}, responses.EasyInputMessageRoleUser)}}})
	refused("a 2-hour video on Responses", err, "2h0m0s long")
	if n := len(g.stdin()); n != before {
		t.Fatalf("agy was given %d more lines for refused parts", n-before)
	}
	if strings.Contains(fmt.Sprint(err), g.dataDir) {
		t.Fatal("an error named a local path")
	}
}
