package timeline

import (
	"fmt"
	"io"
	"sort"
)

// WriteSummary prints where the time went: the share of each phase inside calls, per layer
// the bytes, the measured and the predicted time, the caller's spans, and the rank the others
// waited for most.
func (s *Summary) WriteSummary(w io.Writer) {
	rankSecs := s.SpanUs * float64(s.Ranks)
	fmt.Fprintf(w, "%d ranks over %s", s.Ranks, dur(s.SpanUs))
	if s.ClockErrMax >= 0 {
		fmt.Fprintf(w, " (clocks aligned to rank 0 within %s", dur(s.ClockErrMax))
		if s.Unaligned > 0 {
			fmt.Fprintf(w, "; %d joiners on their wall clocks", s.Unaligned)
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
	if rankSecs > 0 {
		fmt.Fprintf(w, "inside kylix calls: %s of %s rank-time (%.0f%%); the rest is the caller's own work\n",
			dur(s.InCallsUs), dur(rankSecs), 100*s.InCallsUs/rankSecs)
	}
	fmt.Fprintln(w, "phase shares inside calls (all ranks):")
	for _, p := range Phases {
		if t := s.ByPhase[p]; t > 0 {
			fmt.Fprintf(w, "  %-14s %5.1f%%  %s\n", p, 100*t/s.InCallsUs, dur(t))
		}
	}
	if len(s.Layers) > 0 {
		fmt.Fprintln(w, "per layer (bytes sent+received by all ranks; time per rank):")
		fmt.Fprintf(w, "  %-6s %12s %12s %12s\n", "layer", "bytes", "measured", "predicted")
		for _, l := range s.Layers {
			pred := "n/a"
			if l.PredictedUs > 0 {
				pred = dur(l.PredictedUs)
			}
			fmt.Fprintf(w, "  %-6d %12s %12s %12s\n", l.Layer, bytesStr(l.Bytes), dur(l.MeasuredUs), pred)
		}
		if s.Layers[0].PredictedUs == 0 {
			fmt.Fprintln(w, "  (predicted: the job did not measure its links; run with degrees=auto and no min_packet)")
		}
	}
	if len(s.Marks) > 0 {
		names := make([]string, 0, len(s.Marks))
		for n := range s.Marks {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return s.Marks[names[i]] > s.Marks[names[j]] })
		fmt.Fprint(w, "caller's spans (kylix_mark, all ranks):")
		for i, n := range names {
			if i == 8 {
				fmt.Fprint(w, " …")
				break
			}
			fmt.Fprintf(w, " %s %s;", n, dur(s.Marks[n]))
		}
		fmt.Fprintln(w)
	}
	if r, us := s.MostWaitedFor(); r >= 0 {
		fmt.Fprintf(w, "waited for most: rank %d (the others waited %s in all for it while it was at its own work, outside kylix calls", r, dur(us))
		others := 0.0
		for q, t := range s.WaitedFor {
			if q != r {
				others = max(others, t)
			}
		}
		fmt.Fprintf(w, "; the next rank: %s)\n", dur(others))
	}
	if l := s.Lag; l.Carried() {
		fmt.Fprintf(w, "calls start apart: rank %d starts %.0f%% of %d calls last, a median %s after the first rank (a call takes %s), while still in its call before: a lag one call hands on to the next; compare one call's events on every rank\n",
			l.Rank, 100*l.Share, l.Calls, dur(l.MedianUs), dur(l.CallUs))
	}
	if s.Dropped > 0 {
		fmt.Fprintf(w, "warning: %d events were dropped (the writer fell behind)\n", s.Dropped)
	}
	for _, p := range s.Incomplete {
		fmt.Fprintf(w, "note: %s was not closed (the rank was killed or is still running); its events so far are included\n", p)
	}
}

func dur(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	}
	return fmt.Sprintf("%.1f µs", us)
}

func bytesStr(b float64) string {
	u := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(u)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.1f %s", b, u[i])
}
