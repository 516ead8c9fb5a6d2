package timeline

import (
	"fmt"
	"sort"
)

// Lag is how late the last rank starts a collective the others started already, counting only
// the part of it the rank spent still inside its previous call: a delay a dependency inside the
// library hands on from call to call, which the waits of every call then repeat. (A rank that
// starts late because it was at its own work is a straggler instead: MostWaitedFor.)
type Lag struct {
	Calls    int     // collectives every rank ran, each with an earlier call on the last rank
	MedianUs float64 // the median carried lag over those calls
	CallUs   float64 // the median duration of those calls (the last rank's)
	Rank     int     // the rank that started last, with a lag, most often
	Share    float64 // the fraction of the calls it did
}

// Carried says whether the lag is worth a line of the summary: over enough calls, a tenth of a
// call or more, and the same rank last in most of them.
func (l Lag) Carried() bool {
	return l.Calls >= 10 && l.MedianUs >= 5 && l.MedianUs >= l.CallUs/10 && l.Share >= 0.5
}

// callLag measures Lag over aligned ranks: calls are matched across ranks by name and sequence
// number (a key some rank ran twice, as after a resize renumbered, is left out).
func callLag(ranks []*Rank) Lag {
	type span struct {
		start, end, prevEnd float64
		hasPrev, twice      bool // the rank ran a call before this one; ran this key twice
	}
	byKey := map[string]map[int]span{} // name/seq -> rank -> its call
	for _, r := range ranks {
		var calls []*Event
		for k := range r.Events {
			if e := &r.Events[k]; e.Ph == "X" && e.Tid == 0 && e.Args["status"] != nil && e.Args["seq"] != nil {
				calls = append(calls, e)
			}
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i].TS < calls[j].TS })
		prevEnd, hasPrev := 0.0, false // aligned times may be negative: no sentinel value
		for _, e := range calls {
			key := e.Name + "/" + fmt.Sprint(e.Args["seq"])
			m := byKey[key]
			if m == nil {
				m = map[int]span{}
				byKey[key] = m
			}
			if _, twice := m[r.Rank]; twice {
				m[r.Rank] = span{twice: true}
			} else {
				m[r.Rank] = span{start: e.TS, end: e.TS + e.Dur, prevEnd: prevEnd, hasPrev: hasPrev}
			}
			if !hasPrev || e.TS+e.Dur > prevEnd {
				prevEnd, hasPrev = e.TS+e.Dur, true
			}
		}
	}
	var lags, durs []float64
	last := map[int]int{}
	for _, m := range byKey {
		if len(m) != len(ranks) || len(ranks) < 2 {
			continue
		}
		first, lastRank, latest := 1e300, -1, -1e300
		ok := true
		for r, s := range m {
			if s.twice {
				ok = false
				break
			}
			first = min(first, s.start)
			if s.start > latest || s.start == latest && r < lastRank {
				lastRank, latest = r, s.start
			}
		}
		s := m[lastRank]
		if !ok || !s.hasPrev {
			continue
		}
		// The part of the late start the rank spent in its previous call.
		lag := max(0, min(s.prevEnd, s.start)-first)
		lags = append(lags, lag)
		durs = append(durs, s.end-s.start)
		if lag > 0 {
			last[lastRank]++
		}
	}
	l := Lag{Calls: len(lags), Rank: -1}
	if len(lags) == 0 {
		return l
	}
	l.MedianUs, l.CallUs = median(lags), median(durs)
	for r, n := range last {
		if n > last[l.Rank] || n == last[l.Rank] && r < l.Rank {
			l.Rank = r
		}
	}
	if l.Rank >= 0 {
		l.Share = float64(last[l.Rank]) / float64(len(lags))
	}
	return l
}

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}
