package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Audio and video have no block of their own in the Messages API. A
// request carries them as document blocks of their media type (an OpenAI
// client's input_audio and audio or video files become such blocks); a
// backend that adapts them (Antigravity's, with ffmpeg) takes them, any
// other refuses the request, naming the part.

// MediaKind is "audio" or "video" for a media type the gateway can adapt,
// "" for any other.
func MediaKind(mediaType string) string {
	switch strings.ToLower(mediaType) {
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/mp3", "audio/ogg", "audio/flac", "audio/webm", "audio/mp4", "audio/m4a", "audio/x-m4a":
		return "audio"
	case "video/mp4", "video/webm", "video/quicktime", "video/x-matroska":
		return "video"
	}
	return ""
}

// SourceMediaType is the media type a block's source names ("" for none).
func SourceMediaType(src json.RawMessage) string {
	var s struct {
		MediaType string `json:"media_type"`
	}
	_ = json.Unmarshal(src, &s)
	return s.MediaType
}

// firstMedia is the path of the first audio or video document among
// msgs, "" for none.
func firstMedia(msgs []Message) string {
	for i, m := range msgs {
		for j, b := range m.Content {
			if b.Type == BlockDocument && MediaKind(SourceMediaType(b.Source)) != "" {
				return fmt.Sprintf("messages.%d.content.%d", i, j)
			}
		}
	}
	return ""
}
