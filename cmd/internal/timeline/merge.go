package timeline

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
)

// align shifts every rank's events onto one time axis: the earliest origin is 0, and gives
// each rank a distinct process id (its rank; a joiner that reuses a number gets 1000+i).
func align(ranks []*Rank) {
	origin := int64(math.MaxInt64)
	for _, r := range ranks {
		origin = min(origin, r.OriginNs)
	}
	used := map[int]bool{}
	for i, r := range ranks {
		pid := r.Rank
		if used[pid] {
			pid = 1000 + i
		}
		used[pid] = true
		r.assignedPid = pid
		shift := float64(r.OriginNs-origin) / 1000
		for k := range r.Events {
			r.Events[k].TS += shift
			r.Events[k].Pid = pid
		}
		r.OriginNs = origin
	}
}

// Merge loads dir's rank files, aligns them and writes dir/timeline.json: one trace, a process
// per rank, for Perfetto (ui.perfetto.dev) or chrome://tracing. It returns the ranks.
func Merge(dir string) ([]*Rank, string, error) {
	ranks, err := LoadDir(dir)
	if err != nil {
		return nil, "", err
	}
	align(ranks)
	out := filepath.Join(dir, "timeline.json")
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	w.WriteString("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")
	first := true
	put := func(e *Event) {
		if !first {
			w.WriteString(",")
		}
		first = false
		enc.Encode(e) // one event a line
	}
	for _, r := range ranks {
		label := r.Label
		if !r.Complete {
			label += " [file not closed: killed?]"
		}
		put(&Event{Name: "process_name", Ph: "M", Pid: r.assignedPid, Args: map[string]any{"name": label}})
		put(&Event{Name: "process_sort_index", Ph: "M", Pid: r.assignedPid, Args: map[string]any{"sort_index": r.assignedPid}})
		for tid, n := range []string{"calls", "sends", "user"} {
			put(&Event{Name: "thread_name", Ph: "M", Pid: r.assignedPid, Tid: tid, Args: map[string]any{"name": n}})
		}
		put(&Event{Name: "kylix_clock", Ph: "M", Pid: r.assignedPid, Args: map[string]any{
			"rank": r.Rank, "clock_error_us": r.ClockErrUs, "complete": r.Complete, "dropped": r.Dropped, "file": filepath.Base(r.Path)}})
		for k := range r.Events {
			put(&r.Events[k])
		}
	}
	w.WriteString("],\"otherData\":{\"origin_unix_ns\":")
	if len(ranks) > 0 {
		enc.Encode(ranks[0].OriginNs)
	}
	w.WriteString("}}\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, "", err
	}
	if err := f.Close(); err != nil {
		return nil, "", err
	}
	return ranks, out, os.Rename(tmp, out)
}
