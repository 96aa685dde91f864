// Package statusline draws one live line per running spawn under the
// output of `meridian spawn wait`: on a terminal the lines redraw in place
// and are erased before anything else is printed and when the wait ends;
// elsewhere a plain line is printed when a spawn starts a new tool.
package statusline

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Child is one running spawn as its line shows it.
type Child struct {
	ID, Desc string
	Elapsed  time.Duration
	Tokens   int
	LastTool string
	Tools    int
}

// Line renders a child's line, cut to width runes (0: no cut).
func Line(c Child, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s running %s", c.ID, clock(c.Elapsed))
	if c.Tokens > 0 {
		fmt.Fprintf(&b, " · %s tokens", count(c.Tokens))
	}
	if c.LastTool != "" {
		fmt.Fprintf(&b, " · %s", c.LastTool)
		if c.Tools > 1 {
			fmt.Fprintf(&b, " (%d tools)", c.Tools)
		}
	}
	if c.Desc != "" {
		fmt.Fprintf(&b, " · %s", c.Desc)
	}
	s := b.String()
	if r := []rune(s); width > 1 && len(r) > width {
		s = string(r[:width-1]) + "…"
	}
	return s
}

func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func count(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Live keeps the block of lines on w.
type Live struct {
	w        io.Writer
	terminal bool
	width    int
	shown    int               // lines drawn on the terminal now
	told     map[string]string // plain output: the last tool printed per child
}

// New draws on w; terminal says whether w is one, width its columns.
func New(w io.Writer, terminal bool, width int) *Live {
	return &Live{w: w, terminal: terminal, width: width, told: map[string]string{}}
}

// Show draws the running children, replacing what was drawn before.
func (l *Live) Show(children []Child) {
	if !l.terminal {
		for _, c := range children {
			if c.LastTool != "" && l.told[c.ID] != c.LastTool {
				l.told[c.ID] = c.LastTool
				fmt.Fprintln(l.w, Line(c, 0))
			}
		}
		return
	}
	var b strings.Builder
	if l.shown > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", l.shown) // back to the block's first line
	}
	for _, c := range children {
		b.WriteString("\r\x1b[2K")
		b.WriteString(Line(c, l.width))
		b.WriteString("\n")
	}
	b.WriteString("\x1b[J") // whatever the last drawing left below
	l.shown = len(children)
	_, _ = io.WriteString(l.w, b.String())
}

// Clear erases the block, so that other output takes its place; the next
// Show draws it again below that output.
func (l *Live) Clear() {
	if !l.terminal || l.shown == 0 {
		return
	}
	fmt.Fprintf(l.w, "\x1b[%dA\r\x1b[J", l.shown)
	l.shown = 0
}
