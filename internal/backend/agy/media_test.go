package agy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/testkit"
)

// Every audio or video type a request may carry is one agy's adapter
// takes, and no other.
func TestMediaTypesAgreeWithTheProtocol(t *testing.T) {
	for _, mt := range []string{"audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/mp3", "audio/ogg", "audio/flac",
		"audio/webm", "audio/mp4", "audio/m4a", "audio/x-m4a", "video/mp4", "video/webm", "video/quicktime", "video/x-matroska",
		"image/png", "application/pdf", "audio/x-unknown", "video/x-msvideo", "text/plain"} {
		if got, want := mediaKind(mt), anthropic.MediaKind(mt); got != want {
			t.Errorf("%s: agy adapts it as %q, requests carry it as %q", mt, got, want)
		}
	}
}

// Audio without a transcriber is a 400 that names the setting; agy is
// given nothing.
func TestAudioWithoutATranscriberNamesTheSetting(t *testing.T) {
	t.Parallel()
	path, env, calls := testkit.FakeAgy(t, map[string]any{})
	d := New(Config{Path: path, Env: env, SessionRoot: t.TempDir()})
	defer d.Close()
	sess, err := d.Start(context.Background(), backend.StartOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	block, _ := json.Marshal(map[string]any{"type": "document", "source": map[string]string{
		"type": "base64", "media_type": "audio/wav", "data": base64.StdEncoding.EncodeToString([]byte("RIFF"))}})
	res, err := sess.Turn(context.Background(), backend.Input{Content: []json.RawMessage{block}}, func(*backend.Event) error { return nil })
	if err != nil || res.Failure == nil || res.Failure.Status != 400 || !strings.Contains(res.Failure.Message, "--transcriber CMD") ||
		!strings.Contains(res.Failure.Message, "the audio part (content block 0)") {
		t.Fatalf("%v %+v", err, res)
	}
	for _, c := range calls() {
		if _, ok := c["stdin"]; ok {
			t.Fatalf("agy was given %v", c["stdin"])
		}
	}
}
