package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/saguin-edge/saguin/bench/scenario"
)

// Chart geometry, in SVG user units.
const (
	barWidth   = 16
	barGap     = 3
	groupGap   = 26
	plotHeight = 220
	marginTop  = 124 // title, legend, and room for the figure written up a full bar
	marginLeft = 120 // the first group's slanted label reaches left of its bar
	labelSpace = 130 // below the plot, for the slanted case names
)

// palette gives each broker a colour by its position in the report.
var palette = []string{"#1f6feb", "#d4a017", "#2da44e", "#8250df", "#cf222e", "#6e7781"}

// WriteSVG draws one bar group per case, one bar per broker, for the case's
// headline figure. Cases measure different things in different units, so
// each group is scaled to its own best broker: the best bar is full height
// and the others are their share of it, inverted for figures where lower is
// better, so a taller bar is always better. The median is written on each bar
// and the whisker spans the repetitions' min-max. Drawn by hand: the harness
// takes no plotting dependency.
func (r *Report) WriteSVG(w io.Writer) error {
	names := r.brokerNames()
	nb := len(names)
	groupWidth := nb*barWidth + (nb-1)*barGap
	width := max(marginLeft+len(r.Cases)*(groupWidth+groupGap)+20, 560)
	height := marginTop + plotHeight + labelSpace
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="10">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", esc(fmt.Sprintf("Sagüin beside its peers, %s profile, %s", r.Profile, r.Started.UTC().Format("2006-01-02"))))
	fmt.Fprintf(&b, `<text x="10" y="34" fill="#57606a">%s</text>`+"\n", esc("One group per case, its headline figure scaled to the best broker in the group: taller is better."))
	fmt.Fprintf(&b, `<text x="10" y="47" fill="#57606a">%s</text>`+"\n", esc("Each bar carries its median; the whisker spans the repetitions' min-max."))
	for i, n := range names {
		x := 10 + i*150
		fmt.Fprintf(&b, `<rect x="%d" y="56" width="10" height="10" fill="%s"/><text x="%d" y="65">%s</text>`+"\n", x, palette[i%len(palette)], x+14, esc(n))
	}
	// Axis: 0 and 100% of the group's best.
	base := marginTop + plotHeight
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#57606a"/>`+"\n", marginLeft-4, base, width-10, base)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d0d7de" stroke-dasharray="3,3"/>`+"\n", marginLeft-4, marginTop, width-10, marginTop)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">best</text>`+"\n", marginLeft-6, marginTop+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">0</text>`+"\n", marginLeft-6, base+4)

	for gi, c := range r.Cases {
		gx := marginLeft + gi*(groupWidth+groupGap)
		if len(c.Metrics) == 0 {
			continue
		}
		m := c.Metrics[0]
		fig := c.Figures[m.Key]
		best := math.NaN()
		for _, n := range names {
			if s := fig[n]; s.N > 0 {
				best = better(m, best, s.Median)
			}
		}
		for bi, n := range names {
			s := fig[n]
			x := gx + bi*(barWidth+barGap)
			if s.N == 0 || math.IsNaN(best) {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#8c959f">-</text>`+"\n", x+barWidth/2, base-3)
				continue
			}
			h := scale(m, best, s.Median)
			y := float64(base) - h
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				x, y, barWidth, h, palette[bi%len(palette)], esc(fmt.Sprintf("%s %s: %s %s (min %s, max %s, %d runs)", c.Name, n, Number(s.Median), m.Unit, Number(s.Min), Number(s.Max), s.N)))
			top := y
			if s.N > 1 {
				y1, y2 := float64(base)-scale(m, best, s.Min), float64(base)-scale(m, best, s.Max)
				cx := float64(x) + barWidth/2
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#24292f"/>`+"\n", cx, y1, cx, y2)
				top = math.Min(top, math.Min(y1, y2))
			}
			// The figure, written upwards from above the bar and its whisker,
			// so that neighbours never overlap.
			fmt.Fprintf(&b, `<text transform="translate(%.1f,%.1f) rotate(-90)" font-size="9">%s</text>`+"\n",
				float64(x)+barWidth/2+3, top-3, esc(Number(s.Median)))
		}
		figure := m.Label
		if m.Unit != "" {
			figure += " (" + m.Unit + ")"
		}
		// Two slanted lines, ending under the group: the case, then its figure.
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-35)" text-anchor="end" font-weight="bold">%s</text>`+"\n", gx+groupWidth/2, base+12, esc(c.Name))
		fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-35)" text-anchor="end" fill="#57606a" font-size="9">%s</text>`+"\n", gx+groupWidth/2+7, base+22, esc(figure))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// better is whichever of a and x is better for m (a may be NaN: none yet).
func better(m scenario.Metric, a, x float64) float64 {
	if math.IsNaN(a) {
		return x
	}
	if m.Better == scenario.LowerIsBetter {
		return math.Min(a, x)
	}
	return math.Max(a, x)
}

// scale is x's bar height against the group's best: its share of the best,
// or for lower-is-better the best's share of it. A zero on a lower-is-better
// figure is the best possible and gets the full height.
func scale(m scenario.Metric, best, x float64) float64 {
	var share float64
	switch {
	case m.Better == scenario.LowerIsBetter && x <= 0:
		share = 1
	case m.Better == scenario.LowerIsBetter:
		share = math.Max(best, 0) / x
	case best <= 0:
		share = 0
	default:
		share = x / best
	}
	return math.Max(0, math.Min(1, share)) * plotHeight
}

func esc(s string) string { return html.EscapeString(s) }
