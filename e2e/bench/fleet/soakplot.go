package main

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// The plot's geometry: panels in a grid, each with a margin for its
// labels.
const (
	plotPanelW, plotPanelH = 460, 230
	plotCols               = 2
	plotMarginL            = 60
	plotMarginR            = 15
	plotMarginT            = 30
	plotMarginB            = 35
)

// plotColors tell the controllers apart, in the order of soakRun.names.
var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// plotSeries is one line of a panel.
type plotSeries struct {
	name   string
	color  string
	values []float64
}

// svg draws the soak's curves: a panel per figure (each controller's
// heap, RSS, goroutines and open files, the API server's watchers and the
// drift p99 per minute), minutes on the x axis. Plain SVG, written here,
// so that no plotting tool is needed to redraw it.
func (s *soakRun) svg() string {
	minutes := make([]float64, len(s.minutes))
	for i, m := range s.minutes {
		minutes[i] = m.at.Minutes()
	}
	type panel struct {
		title  string
		series []plotSeries
		limit  float64 // a target line; 0 for none
	}
	var panels []panel
	for _, metric := range soakMetrics {
		p := panel{title: metric.name}
		if metric.unit != "" {
			p.title += " (" + metric.unit + ")"
		}
		for i, name := range s.names {
			vs := make([]float64, len(s.minutes))
			for j, m := range s.minutes {
				vs[j] = metric.value(m.controllers[name])
			}
			p.series = append(p.series, plotSeries{name: name, color: plotColors[i%len(plotColors)], values: vs})
		}
		panels = append(panels, p)
	}
	watchers, drift := make([]float64, len(s.minutes)), make([]float64, len(s.minutes))
	for j, m := range s.minutes {
		watchers[j], drift[j] = m.watchers, m.driftP99.Seconds()
	}
	panels = append(panels,
		panel{title: "API server open watches (all clients)", series: []plotSeries{{name: "kube-apiserver", color: "#555555", values: watchers}}},
		panel{title: "drift p99 per minute (s), target 0.5 s", series: []plotSeries{{name: "drift p99", color: "#555555", values: drift}}, limit: soakDriftP99.Seconds()},
	)

	rows := (len(panels) + plotCols - 1) / plotCols
	legendH := 30
	w, h := plotCols*plotPanelW, rows*plotPanelH+legendH+25
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="13">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("soak: %d Kustomizations, %s; x: minutes since the soak began", s.n, s.duration.Round(time.Minute))))
	x := 10
	for i, name := range s.names {
		fmt.Fprintf(&b, `<rect x="%d" y="28" width="12" height="3" fill="%s"/><text x="%d" y="33">%s</text>`+"\n",
			x, plotColors[i%len(plotColors)], x+16, html.EscapeString(name))
		x += 16 + 8*len(name) + 14
	}
	for i, p := range panels {
		ox, oy := (i%plotCols)*plotPanelW, legendH+20+(i/plotCols)*plotPanelH
		drawPanel(&b, ox, oy, p.title, minutes, p.series, p.limit)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// drawPanel draws one panel at (ox, oy): a frame, the y range from 0 (or
// the lowest value) to the highest, the series as polylines.
func drawPanel(b *strings.Builder, ox, oy int, title string, xs []float64, series []plotSeries, limit float64) {
	iw, ih := plotPanelW-plotMarginL-plotMarginR, plotPanelH-plotMarginT-plotMarginB
	left, top := float64(ox+plotMarginL), float64(oy+plotMarginT)
	lo, hi := 0.0, limit
	for _, s := range series {
		for _, v := range s.values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi <= lo {
		hi = lo + 1
	}
	hi *= 1.05
	xmax := 1.0
	if len(xs) > 0 {
		xmax = math.Max(xs[len(xs)-1], 1)
	}
	px := func(x float64) float64 { return left + x/xmax*float64(iw) }
	py := func(y float64) float64 { return top + float64(ih) - (y-lo)/(hi-lo)*float64(ih) }
	fmt.Fprintf(b, `<text x="%.0f" y="%d" font-size="12">%s</text>`+"\n", left, oy+plotMarginT-8, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, iw, ih)
	for _, frac := range []float64{0, 0.5, 1} {
		v := lo + frac*(hi-lo)/1.05
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`+"\n", left-4, py(v)+4, plotNumber(v))
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n", left, py(v), left+float64(iw), py(v))
	}
	for _, x := range []float64{0, xmax / 2, xmax} {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", px(x), top+float64(ih)+15, plotNumber(x))
	}
	if limit > 0 {
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#d62728" stroke-dasharray="4 3"/>`+"\n", left, py(limit), left+float64(iw), py(limit))
	}
	for _, s := range series {
		pts := make([]string, 0, len(s.values))
		for j, v := range s.values {
			if j < len(xs) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[j]), py(v)))
			}
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n",
			s.color, strings.Join(pts, " "), html.EscapeString(s.name))
	}
}

// plotNumber prints an axis label with as few digits as it needs.
func plotNumber(v float64) string {
	switch {
	case v == math.Trunc(v) || math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
