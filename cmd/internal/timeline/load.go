// Package timeline reads the ranks' timeline files (option timeline=DIR, core/trace), merges
// them into one Chrome trace, draws it as SVG and says where the time went: what `kylix
// timeline DIR` and `kylixrun --timeline DIR` do.
package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Event is one Chrome trace event as the ranks write it.
type Event struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	TS   float64        `json:"ts"` // µs
	Dur  float64        `json:"dur,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Rank is one rank's file.
type Rank struct {
	Path        string
	Rank        int     // as its metadata says
	Label       string  // "rank R (host, pid P)"
	OriginNs    int64   // ts 0 of the file on rank 0's wall clock
	ClockErrUs  float64 // the alignment's error bound; -1 unknown
	Complete    bool    // closed by finalize (else killed or still running)
	Dropped     int64   // events the writer could not keep up with
	Truncated   bool    // the last line was cut off
	Events      []Event // calls, phases, waits, marks, instants, counters (metadata apart)
	Stats       map[string]any
	assignedPid int
}

// Load reads one rank's file line by line: the JSON array form with one event a line, whose
// closing bracket (and last line) a killed rank may not have written.
func Load(path string) (*Rank, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Rank{Path: path, Rank: -1, ClockErrUs: -1}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		line = bytes.TrimSuffix(line, []byte(","))
		if len(line) == 0 || string(line) == "[" || string(line) == "]" {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			r.Truncated = true // only a killed writer's last line can be cut
			continue
		}
		n++
		if e.Ph != "M" {
			r.Events = append(r.Events, e)
			r.Events = append(r.Events, inlineSteps(&r.Events[len(r.Events)-1])...)
			continue
		}
		switch e.Name {
		case "process_name":
			r.Label, _ = e.Args["name"].(string)
		case "kylix_clock":
			r.Rank = int(num(e.Args["rank"]))
			r.OriginNs = int64(num(e.Args["origin_unix_ns"]))
			r.ClockErrUs = num(e.Args["clock_error_us"])
		case "kylix_stats":
			r.Stats = e.Args
		case "kylix_end":
			r.Complete = true
			r.Dropped = int64(num(e.Args["dropped"]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if n == 0 || r.Rank < 0 {
		return nil, fmt.Errorf("%s: not a kylix timeline file (no clock record)", path)
	}
	return r, nil
}

// num is a JSON number (float64), or an int of events made in Go; 0 otherwise.
// inlineSteps turns the phases a short call carries in its args ("steps": [name, layer,
// start after the call µs, duration µs] each, core/trace.InlineSteps) into events of their own,
// nested in the call as a long call's are.
func inlineSteps(call *Event) []Event {
	list, ok := call.Args["steps"].([]any)
	if !ok {
		return nil
	}
	delete(call.Args, "steps")
	out := make([]Event, 0, len(list))
	for _, s := range list {
		f, ok := s.([]any)
		if !ok || len(f) != 4 {
			continue
		}
		name, _ := f[0].(string)
		out = append(out, Event{Name: name, Ph: "X", Pid: call.Pid, Tid: call.Tid, TS: call.TS + num(f[2]), Dur: num(f[3]),
			Args: map[string]any{"seq": call.Args["seq"], "layer": num(f[1])}})
	}
	return out
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}

// LoadDir reads every rank-*.json of dir, in rank order (joiners after the original ranks).
func LoadDir(dir string) ([]*Rank, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "rank-*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no rank-*.json files (was the job run with timeline=%s?)", dir, dir)
	}
	var ranks []*Rank
	for _, p := range paths {
		r, err := Load(p)
		if err != nil {
			return nil, err
		}
		ranks = append(ranks, r)
	}
	sort.SliceStable(ranks, func(i, j int) bool {
		ji, jj := isJoiner(ranks[i]), isJoiner(ranks[j])
		if ji != jj {
			return !ji
		}
		return ranks[i].Rank < ranks[j].Rank
	})
	return ranks, nil
}

func isJoiner(r *Rank) bool { return bytes.Contains([]byte(filepath.Base(r.Path)), []byte("-join")) }
