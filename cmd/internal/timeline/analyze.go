package timeline

import (
	"sort"
	"strconv"
	"strings"
)

// Categories of time on a rank's calls lane: the innermost event covering each moment.
const (
	CatOutside = "outside calls" // the caller's own work (and idle)
	CatCall    = "call (other)"  // inside a call, in no phase: argument checks, agreement, planning
	CatWait    = "wait"
)

// Phases in the order the legend and the summary list them.
var Phases = []string{"fill", "combine", "gather", "partition", "sort", "merge", CatWait, CatCall}

// Segment is a stretch of a rank's time in one category.
type Segment struct {
	Start, End float64 // µs
	Cat        string
	Layer      int // -1 when not a layer's
}

func category(e *Event) (string, int) {
	layer := -1
	if l, ok := e.Args["layer"]; ok {
		layer = int(num(l))
	}
	switch e.Name {
	case "wait":
		if !layered(e) { // a barrier's rounds, an agreement, a link probe: no layer
			layer = -1
		}
		return CatWait, layer
	case "fill", "combine", "gather", "partition", "sort", "merge":
		return e.Name, layer
	}
	return CatCall, -1
}

// Flatten turns a rank's nested calls-lane events into non-overlapping segments of the
// innermost event's category.
func Flatten(r *Rank) []Segment {
	var evs []*Event
	for k := range r.Events {
		e := &r.Events[k]
		if e.Ph == "X" && e.Tid == 0 {
			evs = append(evs, e)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].TS != evs[j].TS {
			return evs[i].TS < evs[j].TS
		}
		return evs[i].Dur > evs[j].Dur
	})
	type open struct {
		end   float64
		cat   string
		layer int
	}
	var stack []open
	var segs []Segment
	cur := 0.0
	emit := func(to float64) {
		if len(stack) > 0 && to > cur {
			t := stack[len(stack)-1]
			segs = append(segs, Segment{cur, to, t.cat, t.layer})
		}
		if to > cur {
			cur = to
		}
	}
	popTo := func(t float64) {
		for len(stack) > 0 && stack[len(stack)-1].end <= t {
			emit(stack[len(stack)-1].end)
			stack = stack[:len(stack)-1]
		}
	}
	for _, e := range evs {
		popTo(e.TS)
		emit(e.TS)
		cur = max(cur, e.TS)
		cat, layer := category(e)
		end := e.TS + e.Dur
		if len(stack) > 0 {
			end = min(end, stack[len(stack)-1].end) // a child never outlives its parent
		}
		stack = append(stack, open{end, cat, layer})
	}
	popTo(1e300)
	return segs
}

// Summary is where the time went, over all ranks.
type Summary struct {
	Ranks       int
	SpanUs      float64            // first to last event
	InCallsUs   float64            // all ranks' time inside calls
	ByPhase     map[string]float64 // µs inside calls, by phase
	Layers      []LayerSummary
	WaitedFor   map[int]float64 // µs others waited for each rank while it was outside calls
	WaitedBy    map[int]float64 // µs each rank waited
	Marks       map[string]float64
	Calls       map[string]int
	Dropped     int64
	Incomplete  []string // files of ranks that did not finalize
	ClockErrMax float64
	Unaligned   int // ranks on their own wall clock (joiners: error unknown)
	Lag         Lag // how far apart the ranks start their calls, carried from the call before
}

// LayerSummary is one layer over all ranks: bytes moved, measured phase time, and the cost
// model's time for the same keys and bytes (when the job measured its links).
type LayerSummary struct {
	Layer       int
	Bytes       float64
	MeasuredUs  float64 // per rank, mean
	PredictedUs float64 // per rank; 0: no prediction
}

// Summarize computes the summary of aligned ranks.
func Summarize(ranks []*Rank) *Summary {
	s := &Summary{Ranks: len(ranks), ByPhase: map[string]float64{}, WaitedFor: map[int]float64{},
		WaitedBy: map[int]float64{}, Marks: map[string]float64{}, Calls: map[string]int{}}
	inCalls := map[int][][2]float64{} // rank -> its calls' spans, merged
	for _, r := range ranks {
		if _, ok := inCalls[r.Rank]; !ok {
			inCalls[r.Rank] = callSpans(r)
		}
	}
	lo, hi := 1e300, -1e300
	layerUs := map[int]float64{}
	layerBytes := map[int]float64{}
	for _, r := range ranks {
		rankBytes := map[int]float64{} // the counter is cumulative: its largest value
		s.Dropped += r.Dropped
		if !r.Complete {
			s.Incomplete = append(s.Incomplete, r.Path)
		}
		s.ClockErrMax = max(s.ClockErrMax, r.ClockErrUs)
		if r.ClockErrUs < 0 {
			s.Unaligned++
		}
		for k := range r.Events {
			e := &r.Events[k]
			lo, hi = min(lo, e.TS), max(hi, e.TS+e.Dur)
			switch {
			case e.Ph == "X" && e.Tid == 2:
				s.Marks[e.Name] += e.Dur
			case e.Ph == "X" && e.Name == "wait":
				peer := int(num(e.Args["peer"]))
				// Blame the peer only for the part of the wait it spent outside calls, at its own
				// work: while it was in a call it was waiting or working for the job itself.
				s.WaitedFor[peer] += e.Dur - overlap(inCalls[peer], e.TS, e.TS+e.Dur)
				s.WaitedBy[r.Rank] += e.Dur
			case e.Ph == "C" && e.Name == "bytes":
				for k, v := range e.Args {
					if l, err := strconv.Atoi(strings.TrimPrefix(k, "L")); err == nil {
						rankBytes[l] = max(rankBytes[l], num(v))
					}
				}
			case e.Ph == "X" && e.Tid == 0 && e.Args["status"] != nil:
				s.Calls[e.Name]++
			}
		}
		for l, b := range rankBytes {
			layerBytes[l] += b
		}
		for _, g := range Flatten(r) {
			d := g.End - g.Start
			s.ByPhase[g.Cat] += d
			s.InCallsUs += d
			if g.Layer >= 0 && g.Cat != CatCall {
				layerUs[g.Layer] += d
			}
		}
	}
	if hi > lo {
		s.SpanUs = hi - lo
	}
	s.Lag = callLag(ranks)
	pred := predictLayers(ranks)
	for l := 0; ; l++ {
		us, okU := layerUs[l]
		b, okB := layerBytes[l]
		if !okU && !okB {
			break
		}
		ls := LayerSummary{Layer: l, Bytes: b, MeasuredUs: us / float64(max(len(ranks), 1))}
		if l < len(pred) {
			ls.PredictedUs = pred[l]
		}
		s.Layers = append(s.Layers, ls)
	}
	return s
}

// layered: a message of a plan's layer (not an agreement, barrier or link probe).
func layered(e *Event) bool {
	switch e.Args["phase"] {
	case "config", "down", "up", "config-down":
		return true
	}
	return false
}

// callSpans are r's calls (tid 0 events with a status) as sorted, merged [start, end) spans.
func callSpans(r *Rank) [][2]float64 {
	var iv [][2]float64
	for k := range r.Events {
		e := &r.Events[k]
		if e.Ph == "X" && e.Tid == 0 && e.Args["status"] != nil {
			iv = append(iv, [2]float64{e.TS, e.TS + e.Dur})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	out := iv[:0]
	for _, x := range iv {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}

// overlap is how much of [a, b) the sorted, merged spans iv cover.
func overlap(iv [][2]float64, a, b float64) float64 {
	i := sort.Search(len(iv), func(i int) bool { return iv[i][1] > a })
	t := 0.0
	for ; i < len(iv) && iv[i][0] < b; i++ {
		t += min(iv[i][1], b) - max(iv[i][0], a)
	}
	return t
}

// MostWaitedFor is the rank the others waited for longest, and how long (µs, all ranks).
func (s *Summary) MostWaitedFor() (int, float64) {
	best, us := -1, 0.0
	for r, t := range s.WaitedFor {
		if t > us || t == us && r < best {
			best, us = r, t
		}
	}
	return best, us
}
