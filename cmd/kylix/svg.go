package main

import (
	"fmt"
	"kylix/cmd/internal/timeline"
	"math"
	"strings"
)

// volumeSVG draws the per-layer communication volume as grouped bars, like the paper's Fig. 5:
// for each layer, the bytes all nodes hold going into it (every node's share, its own part
// included: what the layer moves if own packets count), and for the bottom the fully reduced
// values. Predicted bars always; measured bars beside them when a simulation ran. Hand-written
// SVG 1.1, no scripts, no external resources.
func volumeSVG(title string, md layerModel, res *simResult, m int) string {
	type bar struct {
		label, sub string
		pred, meas float64
	}
	bpv, fm := float64(md.BytesPerElem), float64(m)
	var bars []bar
	for i, p := range md.Layers {
		b := bar{label: fmt.Sprintf("layer %d", i+1), sub: fmt.Sprintf("d=%d", p.Degree), pred: fm * p.ElemsPerNode * bpv, meas: -1}
		if res != nil && i < len(res.Layers) {
			b.meas = float64(res.Layers[i].VolumeOutKeys) * bpv
		}
		bars = append(bars, b)
	}
	bottom := bar{label: "bottom", sub: "reduced", pred: fm * md.BottomElems * bpv, meas: -1}
	if res != nil {
		bottom.meas = float64(res.BottomVolume) * bpv
	}
	bars = append(bars, bottom)

	const (
		width, height = 760, 480
		left, right   = 80, 24
		top, bot      = 104, 64
	)
	plotW, plotH := float64(width-left-right), float64(height-top-bot)
	vmax := 0.0
	for _, b := range bars {
		vmax = math.Max(vmax, math.Max(b.pred, b.meas))
	}
	// The axis unit: the binary unit in which the largest bar is 1..1024; ticks at 1, 2 or 5
	// times a power of ten of that unit.
	unit, uname := 1.0, "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if vmax/unit < 1024 {
			break
		}
		unit, uname = unit*1024, u
	}
	step := niceStep(vmax / unit / 5)
	ymax := math.Max(step, math.Ceil(vmax/unit/step)*step)
	y := func(v float64) float64 { return float64(top) + plotH*(1-v/unit/ymax) }

	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&s, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&s, `<text x="%d" y="26" font-size="17" font-weight="bold">Kylix shape: data volume per layer</text>`+"\n", left)
	fmt.Fprintf(&s, `<text x="%d" y="46" font-size="12" fill="#444">%s</text>`+"\n", left, xmlEscape(title))
	fmt.Fprintf(&s, `<text x="%d" y="63" font-size="11" fill="#666">keys held by all nodes going into each layer x bytes per value (own share included, as in the paper's Fig. 5)</text>`+"\n", left)
	// legend
	fmt.Fprintf(&s, `<rect x="%d" y="73" width="12" height="12" fill="#9ecae1" stroke="#5b8fb3"/><text x="%d" y="84" font-size="12">predicted (Prop. 4.1)</text>`+"\n", left, left+18)
	if res != nil {
		fmt.Fprintf(&s, `<rect x="%d" y="73" width="12" height="12" fill="#2b6ca8" stroke="#1b4f7d"/><text x="%d" y="84" font-size="12">measured (simulation of the real core)</text>`+"\n", left+180, left+198)
	}

	// axes and grid
	for i := 0; float64(i)*step <= ymax*(1+1e-9); i++ {
		v := float64(i) * step
		yy := y(v * unit)
		fmt.Fprintf(&s, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>`+"\n", left, yy, width-right, yy)
		fmt.Fprintf(&s, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#333">%.4g</text>`+"\n", left-6, yy+4, v)
	}
	fmt.Fprintf(&s, `<text transform="translate(%d %.1f) rotate(-90)" font-size="12" text-anchor="middle" fill="#333">volume (%s)</text>`+"\n",
		left-44, float64(top)+plotH/2, uname)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", left, top, left, y(0))
	fmt.Fprintf(&s, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", left, y(0), width-right, y(0))

	// bars, labelled with their value in the axis unit
	slot := plotW / float64(len(bars))
	nb := 1.0
	if res != nil {
		nb = 2
	}
	bw := math.Min(slot*0.7/nb, 70)
	for i, b := range bars {
		x0 := float64(left) + slot*float64(i) + (slot-bw*nb)/2
		drawBar(&s, x0, bw, y(b.pred), y(0), "#9ecae1", "#5b8fb3", b.pred/unit)
		if res != nil && b.meas >= 0 {
			drawBar(&s, x0+bw, bw, y(b.meas), y(0), "#2b6ca8", "#1b4f7d", b.meas/unit)
		}
		cx := float64(left) + slot*(float64(i)+0.5)
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`+"\n", cx, y(0)+18, b.label)
		fmt.Fprintf(&s, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" fill="#666">%s</text>`+"\n", cx, y(0)+33, b.sub)
	}
	s.WriteString("</svg>\n")
	return s.String()
}

func drawBar(s *strings.Builder, x, w, y0, y1 float64, fill, stroke string, v float64) {
	fmt.Fprintf(s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="%s"/>`+"\n", x, y0, w, math.Max(0, y1-y0), fill, stroke)
	fmt.Fprintf(s, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle" fill="#333">%.3g</text>`+"\n", x+w/2, y0-4, v)
}

// niceStep and xmlEscape are the timeline picture's (cmd/internal/timeline).
func niceStep(x float64) float64 { return timeline.NiceStep(x) }
func xmlEscape(s string) string  { return timeline.XMLEscape(s) }
