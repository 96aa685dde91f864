package agy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gw/meridian/internal/backend"
)

// agy takes text only on its input: an image or a document in a turn is
// written as a file into the session's private folder (a workspace folder
// of agy's), the turn's text names it, and the session's gate lets agy's
// view_file read exactly the files so attached.

// viewFile is agy's file-reading tool.
const viewFile = "view_file"

// Attachment bounds: a decoded file, and all of one turn's.
const (
	maxAttachment      = 20 << 20
	maxTurnAttachments = 64 << 20
)

// extension is the file extension an attachment of a media type is
// written with; "" for a type agy is not given.
func extension(mediaType string) string {
	switch mediaType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "application/pdf":
		return ".pdf"
	case "text/plain":
		return ".txt"
	}
	return ""
}

// prompt is a user message as agy takes it: its text, with each image or
// document written into the session folder and named where it stood.
// The files become readable by the session's gate.
func (s *Session) prompt(ctx context.Context, content []json.RawMessage) (string, error) {
	var parts []string
	total := 0
	for n, raw := range content {
		var b backend.Block
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", fmt.Errorf("a content block is not JSON: %w", err)
		}
		if b.Type == "document" && mediaKind(b.Source.MediaType) != "" {
			data, err := mediaData(b, n)
			if err != nil {
				return "", err
			}
			if total += len(data); total > maxTurnAttachments {
				return "", fmt.Errorf("the message's attachments come to more than %d MiB, the most one message may attach", maxTurnAttachments>>20)
			}
			text, err := s.media(ctx, b, n, data)
			if err != nil {
				return "", err
			}
			parts = append(parts, text)
			continue
		}
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image", "document":
			data, mediaType, err := attachmentData(b)
			if b.Type == "image" && b.Source.Type == "url" {
				data, mediaType, err = s.d.cfg.Download.Image(ctx, b.Source.URL)
			}
			if err != nil {
				return "", err
			}
			if total += len(data); total > maxTurnAttachments {
				return "", fmt.Errorf("the message's attachments come to more than %d MiB, the most one message may attach", maxTurnAttachments>>20)
			}
			path, err := s.attach(data, extension(mediaType))
			if err != nil {
				return "", err
			}
			name := b.Type
			if b.Title != "" {
				name += " " + strconv.Quote(b.Title)
			}
			parts = append(parts, fmt.Sprintf("[Attached %s (%s): %s — read it with %s.]", name, mediaType, path, viewFile))
		default:
			return "", fmt.Errorf("the Antigravity backend takes text, images, documents, audio and video; a %s block cannot be sent to agy", b.Type)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// attachmentData is the bytes an image or document block carries and
// their media type, or why it cannot be attached.
func attachmentData(b backend.Block) ([]byte, string, error) {
	src := b.Source
	tooLarge := fmt.Errorf("a %s is larger than %d MiB, the most one attachment may be", b.Type, maxAttachment>>20)
	switch {
	case src.Type == "text" && b.Type == "document":
		if len(src.Data) > maxAttachment {
			return nil, "", tooLarge
		}
		return []byte(src.Data), "text/plain", nil
	case src.Type != "base64":
		return nil, "", fmt.Errorf("a %s given by its %s source cannot be sent to agy; send it as base64", b.Type, src.Type)
	case extension(src.MediaType) == "":
		return nil, "", fmt.Errorf("a %s of type %q cannot be sent to agy; it takes PNG, JPEG, GIF and WebP images, PDF and plain-text documents", b.Type, src.MediaType)
	case base64.StdEncoding.DecodedLen(len(src.Data)) > maxAttachment+3:
		return nil, "", tooLarge
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil {
		return nil, "", fmt.Errorf("a %s's base64 data does not decode: %w", b.Type, err)
	}
	if len(data) > maxAttachment {
		return nil, "", tooLarge
	}
	return data, src.MediaType, nil
}

// mediaData is the bytes an audio or video block carries, within the
// bound of one attachment.
func mediaData(b backend.Block, n int) ([]byte, error) {
	kind := mediaKind(b.Source.MediaType)
	tooLarge := fmt.Errorf("the %s part (content block %d) is larger than %d MiB, the most one attachment may be", kind, n, maxAttachment>>20)
	switch {
	case b.Source.Type != "base64":
		return nil, fmt.Errorf("the %s part (content block %d) given by its %s source cannot be sent to agy; send it as base64", kind, n, b.Source.Type)
	case base64.StdEncoding.DecodedLen(len(b.Source.Data)) > maxAttachment+3:
		return nil, tooLarge
	}
	data, err := base64.StdEncoding.DecodeString(b.Source.Data)
	if err != nil {
		return nil, fmt.Errorf("the %s part (content block %d)'s base64 data does not decode: %w", kind, n, err)
	}
	if len(data) > maxAttachment {
		return nil, tooLarge
	}
	return data, nil
}

// attach writes data into the session folder's attachments and lets the
// gate allow reading it; it returns the file's path.
func (s *Session) attach(data []byte, ext string) (string, error) {
	dir := filepath.Join(s.dir, "attachments")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("agy attachment: %w", err)
	}
	s.mu.Lock()
	path := filepath.Join(dir, "attachment-"+strconv.Itoa(len(s.attached)+1)+ext)
	s.mu.Unlock()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("agy attachment: %w", err)
	}
	return path, s.allowRead(path)
}

// readsAttached reports view_file parameters naming a file the session
// attached.
func (s *Session) readsAttached(params json.RawMessage) bool {
	var p struct {
		AbsolutePath string `json:"AbsolutePath"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.attached, p.AbsolutePath)
}

// allowRead adds a file of the session's folder to those the gate lets
// view_file read.
func (s *Session) allowRead(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attached = append(s.attached, path)
	list, _ := json.Marshal(s.attached)
	// Written whole under another name and renamed: the gate never reads
	// half a list.
	tmp := filepath.Join(s.dir, ".agents", attachmentsFile+".tmp")
	if err := os.WriteFile(tmp, list, 0o600); err != nil {
		return fmt.Errorf("agy attachment: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, ".agents", attachmentsFile)); err != nil {
		return fmt.Errorf("agy attachment: %w", err)
	}
	return nil
}
