package web

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// Charts are inline SVG written here, so the pages work offline with no
// script library. Colours come from CSS classes, so dark mode restyles
// them.

// Series is one named line or bar set over the same slices of time.
type Series struct {
	Name   string
	Class  string // CSS class: s1 … s4, err
	Values []float64
}

const (
	chartW, chartH = 640, 180
	padL, padB     = 56, 22
	padT, padR     = 10, 8
)

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// drawFrame draws the axes, the grid and the time labels of a chart.
func drawFrame(b *strings.Builder, title string, top float64, unit string, starts []time.Time) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, chartW, chartH, html.EscapeString(title))
	plotH := float64(chartH - padB - padT)
	for i := 0; i <= 2; i++ {
		y := float64(padT) + plotH*float64(i)/2
		v := top * float64(2-i) / 2
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, y, y)
		fmt.Fprintf(b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s%s</text>`, padL-6, y+4, fmtNum(v), html.EscapeString(unit))
	}
	if len(starts) > 0 {
		first, last := starts[0], starts[len(starts)-1]
		layout := "15:04"
		switch span := last.Sub(first); {
		case span > 36*time.Hour:
			layout = "Jan 2"
		case span > 6*time.Hour:
			layout = "Jan 2 15:04"
		}
		fmt.Fprintf(b, `<text class="axis" x="%d" y="%d">%s</text>`, padL, chartH-6, first.Local().Format(layout))
		fmt.Fprintf(b, `<text class="axis" x="%d" y="%d" text-anchor="end">%s</text>`, chartW-padR, chartH-6, last.Local().Format(layout))
	}
}

// Bars draws stacked bars, one stack per slice of time.
func Bars(title, unit string, starts []time.Time, series ...Series) template.HTML {
	n := len(starts)
	var top float64
	for i := range n {
		var sum float64
		for _, s := range series {
			sum += s.Values[i]
		}
		top = max(top, sum)
	}
	top = niceMax(top)
	var b strings.Builder
	drawFrame(&b, title, top, unit, starts)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padB-padT)
	w := plotW / float64(max(n, 1))
	for i := range n {
		y := float64(padT) + plotH
		for _, s := range series {
			h := plotH * s.Values[i] / top
			if h <= 0 {
				continue
			}
			y -= h
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s: %s</title></rect>`,
				s.Class, float64(padL)+float64(i)*w+0.5, y, max(w-1, 1), h,
				starts[i].Local().Format("Jan 2 15:04"), html.EscapeString(s.Name), fmtNum(s.Values[i]))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String() + legend(series))
}

// Lines draws one polyline per series; a slice without a value (0) is
// skipped, not drawn as zero.
func Lines(title, unit string, starts []time.Time, series ...Series) template.HTML {
	var top float64
	for _, s := range series {
		for _, v := range s.Values {
			top = max(top, v)
		}
	}
	top = niceMax(top)
	var b strings.Builder
	drawFrame(&b, title, top, unit, starts)
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padB-padT)
	step := plotW / float64(max(len(starts), 1))
	for _, s := range series {
		var pts []string
		for i, v := range s.Values {
			if v <= 0 {
				continue
			}
			x := float64(padL) + step*(float64(i)+0.5)
			y := float64(padT) + plotH*(1-v/top)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="2.5"><title>%s %s: %s%s</title></circle>`,
				s.Class, x, y, starts[i].Local().Format("Jan 2 15:04"), html.EscapeString(s.Name), fmtNum(v), html.EscapeString(unit))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, s.Class, strings.Join(pts, " "))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String() + legend(series))
}

// HBar is one row of a horizontal bar chart.
type HBar struct {
	Name  string
	Value float64
	Label string // the value as shown
}

// HBars draws labelled horizontal bars, longest first as given.
func HBars(title string, rows []HBar) template.HTML {
	if len(rows) == 0 {
		return template.HTML(`<p class="empty">nothing yet</p>`)
	}
	var top float64
	for _, r := range rows {
		top = max(top, r.Value)
	}
	if top <= 0 {
		top = 1
	}
	const rowH, labelW, valueW, width = 22, 170, 90, 640
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart hbars" viewBox="0 0 %d %d" role="img" aria-label="%s">`, width, rowH*len(rows)+4, html.EscapeString(title))
	for i, r := range rows {
		y := i*rowH + 2
		w := float64(width-labelW-valueW) * r.Value / top
		fmt.Fprintf(&b, `<text class="label" x="0" y="%d">%s</text>`, y+15, html.EscapeString(clip(r.Name, 26)))
		fmt.Fprintf(&b, `<rect class="s1" x="%d" y="%d" width="%.1f" height="%d"><title>%s: %s</title></rect>`,
			labelW, y+3, max(w, 1), rowH-6, html.EscapeString(r.Name), html.EscapeString(r.Label))
		fmt.Fprintf(&b, `<text class="value" x="%d" y="%d" text-anchor="end">%s</text>`, width, y+15, html.EscapeString(r.Label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func legend(series []Series) string {
	var b strings.Builder
	b.WriteString(`<div class="legend">`)
	for _, s := range series {
		fmt.Fprintf(&b, `<span><i class="swatch %s"></i>%s</span>`, s.Class, html.EscapeString(s.Name))
	}
	b.WriteString(`</div>`)
	return b.String()
}
