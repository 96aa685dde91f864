package tray

import (
	"bytes"
	"image"
	"image/color"
	"image/png"

	"github.com/meridian-gw/meridian/internal/glance"
)

// drawIcons draws the icon of each level: a disc whose colour says it
// (no image files to ship).
func drawIcons() map[glance.Level][]byte {
	return map[glance.Level][]byte{
		glance.Serving:  disc(color.RGBA{0x2e, 0xa0, 0x43, 0xff}),
		glance.Degraded: disc(color.RGBA{0xd2, 0x99, 0x22, 0xff}),
		glance.Paused:   disc(color.RGBA{0x6e, 0x77, 0x81, 0xff}),
		glance.Down:     disc(color.RGBA{0xcf, 0x22, 0x2e, 0xff}),
	}
}

// disc draws a 32-pixel disc with a light ring, readable on dark and
// light panels.
func disc(c color.RGBA) []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	for y := range n {
		for x := range n {
			dx, dy := float64(x)-15.5, float64(y)-15.5
			switch d := dx*dx + dy*dy; {
			case d <= 12*12:
				img.Set(x, y, c)
			case d <= 14*14:
				img.Set(x, y, color.NRGBA{0xff, 0xff, 0xff, 0xe0})
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // an in-memory image always encodes
	}
	return b.Bytes()
}
