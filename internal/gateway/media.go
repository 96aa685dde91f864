package gateway

import (
	"github.com/meridian-gw/meridian/internal/anthropic"
	"github.com/meridian-gw/meridian/internal/backend"
)

// takesMedia refuses a request with audio or video for a backend that
// cannot adapt them, naming the first such part.
func (g *Gateway) takesMedia(req *anthropic.MessagesRequest) *Error {
	if req.MediaAt == "" {
		return nil
	}
	if _, ok := g.cfg.Backend.(backend.MediaAdapter); ok {
		return nil
	}
	e := InvalidRequest("audio and video parts are taken by the Antigravity backend, which adapts them with ffmpeg; the " +
		g.cfg.CLI.Name + " backend takes text, images and documents")
	e.Param = req.MediaAt
	return e
}
