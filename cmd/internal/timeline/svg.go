package timeline

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strings"
)

// Colours of the phases; waits stand out in red.
var phaseColours = map[string]string{
	"fill": "#8dd3c7", "combine": "#80b1d3", "gather": "#b3de69", "partition": "#fdb462",
	"sort": "#bebada", "merge": "#fccde5", CatWait: "#e41a1c", CatCall: "#bdbdbd",
}

const (
	svgWidth  = 1200
	svgLeft   = 150
	svgRight  = 20
	svgTop    = 70
	laneH     = 26 // the calls lane
	userH     = 12 // the caller's spans under it
	laneGap   = 10
	svgBottom = 50
)

// WriteSVG draws the aligned ranks: a lane per rank with each pixel column coloured by the
// phase that took most of it (waits in red), the caller's spans beneath, a time axis and a
// legend. One rect per run of equal columns, so the file stays small however long the run.
// Hand-written SVG 1.1, no scripts.
func WriteSVG(w io.Writer, ranks []*Rank, title string) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ranks {
		for k := range r.Events {
			e := &r.Events[k]
			lo, hi = math.Min(lo, e.TS), math.Max(hi, e.TS+e.Dur)
		}
	}
	if !(hi > lo) {
		lo, hi = 0, 1
	}
	cols := svgWidth - svgLeft - svgRight
	colUs := (hi - lo) / float64(cols)
	height := svgTop + len(ranks)*(laneH+userH+laneGap) + svgBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", svgLeft, XMLEscape(title))
	// legend
	x := svgLeft
	for _, p := range append(append([]string{}, Phases...), "caller's spans") {
		c := phaseColours[p]
		if c == "" {
			c = "#6a3d9a"
		}
		fmt.Fprintf(&b, `<rect x="%d" y="32" width="12" height="12" fill="%s"/><text x="%d" y="43">%s</text>`+"\n", x, c, x+16, XMLEscape(p))
		x += 28 + 7*len(p)
	}
	for i, r := range ranks {
		y := svgTop + i*(laneH+userH+laneGap)
		label := fmt.Sprintf("rank %d", r.Rank)
		if !r.Complete {
			label += " (killed?)"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", svgLeft-8, y+laneH/2+4, XMLEscape(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4"/>`+"\n", svgLeft, y, cols, laneH)
		runs(&b, columns(Flatten(r), lo, colUs, cols), y, laneH, func(cat string) string { return phaseColours[cat] })
		runs(&b, columns(userSegments(r), lo, colUs, cols), y+laneH+1, userH-2, userColour)
	}
	// time axis
	ay := svgTop + len(ranks)*(laneH+userH+laneGap) + 4
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000"/>`+"\n", svgLeft, ay, svgLeft+cols, ay)
	step := NiceStep((hi - lo) / 8)
	for t := 0.0; t <= hi-lo+step/1e6; t += step {
		px := float64(svgLeft) + t/colUs
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			px, ay, px, ay+5, px, ay+18, dur(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">time since the first event (each column: the phase that took most of it; red: waiting for a peer)</text>`+"\n",
		svgLeft+cols/2, ay+36)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// userSegments are a rank's kylix_mark spans, innermost first where they nest.
func userSegments(r *Rank) []Segment {
	var segs []Segment
	for k := range r.Events {
		e := &r.Events[k]
		if e.Ph == "X" && e.Tid == 2 {
			segs = append(segs, Segment{e.TS, e.TS + e.Dur, e.Name, -1})
		}
	}
	// longer first, so inner spans (drawn later in columns) win their columns
	sort.SliceStable(segs, func(i, j int) bool { return segs[i].End-segs[i].Start > segs[j].End-segs[j].Start })
	return segs
}

// columns gives each pixel column the category covering most of it ("" for none).
func columns(segs []Segment, lo, colUs float64, cols int) []string {
	type acc map[string]float64
	per := make([]acc, cols)
	for _, g := range segs {
		a := int((g.Start - lo) / colUs)
		z := int((g.End - lo) / colUs)
		for c := max(a, 0); c <= min(z, cols-1); c++ {
			c0, c1 := lo+float64(c)*colUs, lo+float64(c+1)*colUs
			d := math.Min(g.End, c1) - math.Max(g.Start, c0)
			if d <= 0 {
				continue
			}
			if per[c] == nil {
				per[c] = acc{}
			}
			per[c][g.Cat] += d
		}
	}
	out := make([]string, cols)
	for c, m := range per {
		best, bt := "", colUs*0.02 // a column mostly empty stays empty
		for cat, t := range m {
			if t > bt || t == bt && cat < best {
				best, bt = cat, t
			}
		}
		out[c] = best
	}
	return out
}

// runs draws one rect per run of equal non-empty columns.
func runs(b *strings.Builder, cols []string, y, h int, colour func(string) string) {
	for c := 0; c < len(cols); {
		e := c
		for e < len(cols) && cols[e] == cols[c] {
			e++
		}
		if cat := cols[c]; cat != "" {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				svgLeft+c, y, e-c, h, colour(cat), XMLEscape(cat))
		}
		c = e
	}
}

// userColour is a stable purple-to-brown shade per span name.
func userColour(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	shades := []string{"#6a3d9a", "#8c6bb1", "#b15928", "#88419d", "#54278f", "#a6761d"}
	return shades[h.Sum32()%uint32(len(shades))]
}

// NiceStep rounds x up to 1, 2 or 5 times a power of ten (x <= 0 gives 1): an axis's tick.
func NiceStep(x float64) float64 {
	if !(x > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// XMLEscape escapes s for SVG text and attributes.
func XMLEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
