package agy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
	"github.com/meridian-gw/meridian/internal/backend/subproc"
)

// agy takes neither audio nor video. A turn's audio is written into a
// disposable folder, converted by ffmpeg to 16 kHz mono WAV and given to
// the transcriber the operator configured (--transcriber), whose text
// stands in the prompt; a video becomes frames (ffmpeg, at most one a
// second and maxFrames in all) attached as images, which agy's view_file
// may read, and its sound track's transcript when a transcriber is set.
// ffmpeg runs in that folder on relative names, with the demuxer fixed by
// the part's media type and only the file protocol allowed, so a part
// cannot make it read anything but itself (a playlist or a reference to
// another file does not parse as the type it claims).

// Media bounds: a part's length, the frames of a video, the time one
// part's processing may take, and a transcript's size.
const (
	maxMediaDuration = 15 * time.Minute
	maxFrames        = 16
	mediaTimeout     = 2 * time.Minute
	maxTranscript    = 256 << 10
)

// mediaKind is "audio" or "video" for a media type agy's parts are
// adapted from, "" for any other.
func mediaKind(mediaType string) string {
	if f, _ := demuxer(mediaType); f == "" {
		return ""
	}
	kind, _, _ := strings.Cut(strings.ToLower(mediaType), "/")
	return kind
}

// demuxer fixes ffmpeg's input format by media type.
func demuxer(mediaType string) (format, ext string) {
	switch strings.ToLower(mediaType) {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav", ".wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3", ".mp3"
	case "audio/ogg":
		return "ogg", ".ogg"
	case "audio/flac":
		return "flac", ".flac"
	case "audio/webm", "video/webm", "video/x-matroska":
		return "matroska", ".mkv"
	case "audio/mp4", "audio/m4a", "audio/x-m4a", "video/mp4", "video/quicktime":
		return "mov", ".mp4"
	}
	return "", ""
}

// mediaError is why a part could not be adapted, with the status the
// request gets: 400 for the part itself, 500 for the machine (no ffmpeg,
// a failing transcriber).
type mediaError struct {
	status int
	msg    string
}

func (e *mediaError) Error() string { return e.msg }

func badPart(format string, args ...any) error {
	return &mediaError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// promptFailure is a prompt's error as the turn's failure.
func promptFailure(err error) *backend.Failure {
	var me *mediaError
	if errors.As(err, &me) && me.status != http.StatusBadRequest {
		return &backend.Failure{Kind: backend.FailUpstream, Status: me.status, Type: "api_error", Message: me.msg}
	}
	return &backend.Failure{Kind: backend.FailUpstream, Status: http.StatusBadRequest, Type: "invalid_request_error", Message: err.Error()}
}

// probe is what ffprobe says of a part.
type probe struct {
	duration time.Duration
	audio    bool
	video    bool
}

// media adapts one audio or video block, the n-th of its message, into
// the text that stands for it in the prompt.
func (s *Session) media(ctx context.Context, b backend.Block, n int, data []byte) (string, error) {
	kind := mediaKind(b.Source.MediaType)
	name := fmt.Sprintf("the %s part (content block %d)", kind, n)
	format, ext := demuxer(b.Source.MediaType)
	if format == "" {
		return "", badPart("%s: media type %q cannot be adapted for agy", name, b.Source.MediaType)
	}
	if kind == "audio" && s.d.cfg.Transcriber == "" {
		return "", badPart("%s: audio reaches agy as a transcript, and this Meridian has no transcriber: start it with --transcriber CMD (MERIDIAN_TRANSCRIBER), a command given a 16 kHz mono WAV file that prints its text", name)
	}
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	dir, err := s.mediaFolder()
	if err != nil {
		return "", err
	}
	input := "input" + ext
	if err := os.WriteFile(filepath.Join(dir, input), data, 0o600); err != nil {
		return "", fmt.Errorf("agy media: %w", err)
	}
	// The input goes as soon as it is adapted; frames stay for view_file.
	defer os.Remove(filepath.Join(dir, input))
	p, err := s.probe(ctx, dir, format, input, name, kind)
	if err != nil {
		return "", err
	}
	label := fmt.Sprintf("%s (%s, %.1f s)", kind, b.Source.MediaType, p.duration.Seconds())
	if b.Title != "" {
		label = fmt.Sprintf("%s %q (%s, %.1f s)", kind, b.Title, b.Source.MediaType, p.duration.Seconds())
	}
	if kind == "audio" {
		text, err := s.transcribe(ctx, dir, format, input, name)
		if err != nil {
			return "", err
		}
		_ = os.RemoveAll(dir)
		return fmt.Sprintf("[Attached %s. Its transcript:\n%s\n(end of the transcript)]", label, text), nil
	}
	frames, every, err := s.frames(ctx, dir, format, input, name, p.duration)
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("[Attached %s as %d frames, one every %.1f s: %s — read them with %s.", label, len(frames), every.Seconds(), strings.Join(frames, ", "), viewFile)
	switch {
	case p.audio && s.d.cfg.Transcriber != "":
		text, err := s.transcribe(ctx, dir, format, input, name)
		if err != nil {
			return "", err
		}
		out += " Its sound track's transcript:\n" + text + "\n(end of the transcript)"
	case p.audio:
		out += " Its sound track is not transcribed: this Meridian has no transcriber."
	}
	return out + "]", nil
}

// mediaFolder makes a disposable folder for one part, inside the
// session's attachments (where the gate lets view_file read).
func (s *Session) mediaFolder() (string, error) {
	root := filepath.Join(s.dir, "attachments")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("agy media: %w", err)
	}
	dir, err := os.MkdirTemp(root, "media-")
	if err != nil {
		return "", fmt.Errorf("agy media: %w", err)
	}
	return dir, nil
}

// probe reads a part's length and streams, refusing one that is not the
// kind it claims, cannot be read, or is too long.
func (s *Session) probe(ctx context.Context, dir, format, input, name, kind string) (probe, error) {
	out, stderr, err := s.tool(ctx, dir, "ffprobe", "-v", "error", "-protocol_whitelist", "file", "-f", format,
		"-show_entries", "format=duration:stream=codec_type", "-of", "json", input)
	if err != nil {
		if ctx.Err() != nil {
			return probe{}, &mediaError{status: http.StatusInternalServerError, msg: name + ": reading it took longer than " + mediaTimeout.String()}
		}
		if isMediaError(err) {
			return probe{}, err
		}
		return probe{}, badPart("%s could not be read as %s: %s", name, format, firstLine(stderr))
	}
	var v struct {
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
		Streams []struct {
			Type string `json:"codec_type"`
		} `json:"streams"`
	}
	if json.Unmarshal(out, &v) != nil {
		return probe{}, badPart("%s could not be read as %s", name, format)
	}
	var p probe
	for _, st := range v.Streams {
		p.audio = p.audio || st.Type == "audio"
		p.video = p.video || st.Type == "video"
	}
	secs, err := strconv.ParseFloat(v.Format.Duration, 64)
	switch {
	case kind == "audio" && !p.audio, kind == "video" && !p.video:
		return probe{}, badPart("%s has no %s stream", name, kind)
	case err != nil || secs <= 0 || math.IsInf(secs, 0) || math.IsNaN(secs):
		return probe{}, badPart("%s states no length", name)
	case secs > maxMediaDuration.Seconds():
		return probe{}, badPart("%s is %s long; agy is given at most %s of audio or video", name, (time.Duration(secs) * time.Second).Round(time.Second), maxMediaDuration)
	}
	p.duration = time.Duration(secs * float64(time.Second))
	return p, nil
}

// frames extracts a video's frames as PNG files, at most one a second and
// maxFrames spread over the whole length, and attaches them.
func (s *Session) frames(ctx context.Context, dir, format, input, name string, length time.Duration) ([]string, time.Duration, error) {
	every := max(time.Second, length/maxFrames)
	rate := fmt.Sprintf("1/%.3f", every.Seconds())
	if _, stderr, err := s.tool(ctx, dir, "ffmpeg", "-nostdin", "-v", "error", "-protocol_whitelist", "file", "-f", format, "-i", input,
		"-vf", "fps="+rate+",scale='min(1280,iw)':-2", "-frames:v", strconv.Itoa(maxFrames), "-f", "image2", "frame-%02d.png"); err != nil {
		if isMediaError(err) {
			return nil, 0, err
		}
		if ctx.Err() != nil {
			return nil, 0, &mediaError{status: http.StatusInternalServerError, msg: name + ": taking its frames took longer than " + mediaTimeout.String()}
		}
		return nil, 0, badPart("%s: its frames could not be taken: %s", name, firstLine(stderr))
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "frame-*.png"))
	if len(matches) == 0 {
		return nil, 0, badPart("%s has no frame to show", name)
	}
	for _, m := range matches {
		if err := s.allowRead(m); err != nil {
			return nil, 0, err
		}
	}
	return matches, every, nil
}

// transcribe converts a part's sound to 16 kHz mono WAV and runs the
// transcriber on it; the text it prints is the transcript.
func (s *Session) transcribe(ctx context.Context, dir, format, input, name string) (string, error) {
	const wav = "speech.wav"
	if _, stderr, err := s.tool(ctx, dir, "ffmpeg", "-nostdin", "-v", "error", "-protocol_whitelist", "file", "-f", format, "-i", input,
		"-vn", "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", "-map_metadata", "-1", "-fflags", "+bitexact", "-f", "wav", wav); err != nil {
		if isMediaError(err) {
			return "", err
		}
		if ctx.Err() != nil {
			return "", &mediaError{status: http.StatusInternalServerError, msg: name + ": converting its sound took longer than " + mediaTimeout.String()}
		}
		return "", badPart("%s: its sound could not be converted: %s", name, firstLine(stderr))
	}
	defer os.Remove(filepath.Join(dir, wav))
	// The operator's command, with the file as its last argument.
	out, stderr, err := subproc.Run(ctx, s.d.cfg.Launcher, subproc.Spec{Path: "/bin/sh",
		Args: []string{"-c", s.d.cfg.Transcriber + ` "$1"`, "meridian-transcriber", wav}, Env: s.d.env(), Dir: dir})
	if err != nil {
		s.d.log.Warn("the transcriber failed", "err", err, "stderr", firstLine(stderr))
		if ctx.Err() != nil {
			return "", &mediaError{status: http.StatusInternalServerError, msg: name + ": the transcriber took longer than " + mediaTimeout.String()}
		}
		return "", &mediaError{status: http.StatusInternalServerError, msg: name + ": the transcriber (--transcriber) failed; its error is in Meridian's log"}
	}
	text := strings.TrimSpace(string(out))
	if len(text) > maxTranscript {
		text = text[:maxTranscript] + "…"
	}
	return text, nil
}

func isMediaError(err error) bool {
	var me *mediaError
	return errors.As(err, &me)
}

// tool runs ffmpeg or ffprobe in dir. One that is not installed is a 500
// saying what to install.
func (s *Session) tool(ctx context.Context, dir, name string, args ...string) ([]byte, []byte, error) {
	configured := s.d.cfg.FFprobe
	if name == "ffmpeg" {
		configured = s.d.cfg.FFmpeg
	}
	path, err := backend.Locate(name, configured, "")
	if err != nil {
		return nil, nil, &mediaError{status: http.StatusInternalServerError,
			msg: fmt.Sprintf("audio and video reach agy through %s, which is not installed here (Debian: apt install ffmpeg)", name)}
	}
	return subproc.Run(ctx, s.d.cfg.Launcher, subproc.Spec{Path: path, Args: args, Env: s.d.env(), Dir: dir})
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	if line == "" {
		return "no reason given"
	}
	return line
}
