package timeline

import (
	"bytes"
	"strings"
	"testing"
)

// lagRanks: two ranks making n calls, one every 1.2 ms from origin. Rank 0's take 1 ms; rank 1 starts each
// `late` µs after rank 0, and with `busy` its call ends with rank 0's and it spends the gap at
// its own work (a straggler), else its call runs until just before its next one (a lag carried
// on from call to call).
func lagRanks(n int, late float64, busy bool, origin float64) []*Rank {
	r0, r1 := &Rank{Rank: 0, Complete: true}, &Rank{Rank: 1, Complete: true}
	for i := 0; i < n; i++ {
		t0 := origin + float64(i)*1200
		r0.Events = append(r0.Events, call("kylix_reduce", i, t0, 1000))
		d1 := 1200.0
		if busy {
			d1 = 1000 - late
		}
		r1.Events = append(r1.Events, call("kylix_reduce", i, t0+late, d1))
	}
	return []*Rank{r0, r1}
}

func TestSummaryNamesALagCarriedBetweenCalls(t *testing.T) {
	for _, c := range []struct {
		name string
		late float64
		busy bool
		want bool
		at   float64 // the first call's time: aligned times may be negative
	}{
		{"carried", 180, false, true, 0},
		{"carried, before rank 0's origin", 180, false, true, -1e6},
		{"straggler", 180, true, false, 0}, // late from its own work: MostWaitedFor's case
		{"in step", 1, false, false, 0},
	} {
		s := Summarize(lagRanks(50, c.late, c.busy, c.at))
		l := s.Lag
		if l.Carried() != c.want {
			t.Errorf("%s: %+v, carried %v, want %v", c.name, l, l.Carried(), c.want)
		}
		var out bytes.Buffer
		s.WriteSummary(&out)
		line := strings.Contains(out.String(), "calls start apart: rank 1 starts 100% of 49 calls last, a median 180.0 µs")
		if line != c.want {
			t.Errorf("%s: summary line %v, want %v:\n%s", c.name, line, c.want, out.String())
		}
	}
}
