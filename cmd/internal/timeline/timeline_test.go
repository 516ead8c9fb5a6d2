package timeline

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/core/trace"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rankFile writes a rank file as core/trace does: a clock record, then events, closed or not.
func rankFile(t *testing.T, dir string, rank int, originNs int64, errUs float64, events []Event, closed bool) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("[\n")
	fmt.Fprintf(&b, `{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"rank %d (h, pid 1)"}},`+"\n", rank, rank)
	fmt.Fprintf(&b, `{"name":"kylix_clock","ph":"M","pid":%d,"tid":0,"args":{"rank":%d,"origin_unix_ns":%d,"clock_error_us":%g}},`+"\n", rank, rank, originNs, errUs)
	for _, e := range events {
		e.Pid = rank
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteString(",\n")
	}
	if closed {
		fmt.Fprintf(&b, `{"name":"kylix_end","ph":"M","pid":%d,"tid":0,"args":{"events":%d,"dropped":3}}`+"\n]\n", rank, len(events))
	} else {
		b.WriteString(`{"name":"wait","ph":"X","pid":1,"tid":0,"ts":12`) // cut mid-line by a kill
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank-%d.json", rank)), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func call(name string, seq int, ts, dur float64) Event {
	return Event{Name: name, Ph: "X", TS: ts, Dur: dur, Args: map[string]any{"seq": seq, "status": "ok"}}
}

func step(name string, seq, layer int, ts, dur float64) Event {
	return Event{Name: name, Ph: "X", TS: ts, Dur: dur, Args: map[string]any{"seq": seq, "layer": layer}}
}

func wait(peer, layer int, ts, dur float64, bytes int) Event {
	return Event{Name: "wait", Ph: "X", TS: ts, Dur: dur, Args: map[string]any{"peer": peer, "layer": layer, "phase": "down", "bytes": bytes}}
}

// Two ranks: rank 1's file starts 1 ms later and was killed (cut last line); rank 0 waits
// 300 µs for rank 1 inside a combine.
func twoRanks(t *testing.T) string {
	dir := t.TempDir()
	rankFile(t, dir, 0, 1_000_000_000, 0, []Event{
		call("kylix_reduce", 5, 1000, 500),
		step("fill", 5, 0, 1000, 50),
		step("combine", 5, 0, 1050, 400),
		wait(1, 0, 1100, 300, 4096),
		step("gather", 5, 0, 1450, 50),
		{Name: "compute", Ph: "X", Tid: 2, TS: 100, Dur: 800},
		{Name: "bytes", Ph: "C", TS: 1200, Args: map[string]any{"L0": 4000}},
		{Name: "bytes", Ph: "C", TS: 1500, Args: map[string]any{"L0": 8192}},
	}, true)
	rankFile(t, dir, 1, 1_000_001_000, 12.5, []Event{
		call("kylix_reduce", 5, 0, 520),
		step("combine", 5, 0, 10, 500),
		wait(0, 0, 20, 10, 4096),
		wait(0, 0, 1100, 100, 0), // rank 0 is in its call then: not its own work, no blame
		{Name: "bytes", Ph: "C", TS: 520, Args: map[string]any{"L0": 100, "L1": 7}},
	}, false)
	return dir
}

func TestLoadKilledFile(t *testing.T) {
	dir := twoRanks(t)
	r, err := Load(filepath.Join(dir, "rank-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete || !r.Truncated || len(r.Events) != 5 || r.ClockErrUs != 12.5 || r.Rank != 1 {
		t.Errorf("killed file: complete %v truncated %v events %d err %v rank %d", r.Complete, r.Truncated, len(r.Events), r.ClockErrUs, r.Rank)
	}
	r0, err := Load(filepath.Join(dir, "rank-0.json"))
	if err != nil || !r0.Complete || r0.Dropped != 3 {
		t.Errorf("closed file: %+v %v", r0, err)
	}
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil {
		t.Error("a missing file loads")
	}
	os.WriteFile(filepath.Join(dir, "junk.json"), []byte("[\n{\"name\":\"x\",\"ph\":\"X\"},\n"), 0o644)
	if _, err := Load(filepath.Join(dir, "junk.json")); err == nil || !strings.Contains(err.Error(), "not a kylix timeline") {
		t.Errorf("a file without a clock record: %v", err)
	}
}

func TestMergeAlignsAndLoads(t *testing.T) {
	dir := twoRanks(t)
	ranks, path, err := Merge(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	var doc struct {
		TraceEvents []Event `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("timeline.json: %v", err)
	}
	pids := map[int]bool{}
	for _, e := range doc.TraceEvents {
		pids[e.Pid] = true
		if e.Pid == 1 && e.Name == "kylix_reduce" && e.TS != 1 { // 1000 ns later origin = 1 µs
			t.Errorf("rank 1's call at %v µs, want 1", e.TS)
		}
	}
	if !pids[0] || !pids[1] || len(ranks) != 2 {
		t.Errorf("processes %v", pids)
	}
}

func TestFlattenInnermost(t *testing.T) {
	r := &Rank{Events: []Event{
		call("kylix_reduce", 1, 0, 100),
		step("combine", 1, 0, 10, 60),
		wait(1, 0, 20, 30, 8),
		step("gather", 1, 0, 70, 20),
	}}
	got := Flatten(r)
	want := []Segment{{0, 10, CatCall, -1}, {10, 20, "combine", 0}, {20, 50, CatWait, 0}, {50, 70, "combine", 0},
		{70, 90, "gather", 0}, {90, 100, CatCall, -1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestSummaryNamesTheRankWaitedFor(t *testing.T) {
	ranks, _, err := Merge(twoRanks(t))
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(ranks)
	if r, us := s.MostWaitedFor(); r != 1 || us != 300 || s.WaitedFor[0] != 10 {
		t.Errorf("most waited for: rank %d, %v µs; want rank 1, 300 (and rank 0 10: %v)", r, us, s.WaitedFor)
	}
	if s.ByPhase[CatWait] != 410 || s.Marks["compute"] != 800 || s.Dropped != 3 || len(s.Incomplete) != 1 {
		t.Errorf("summary: %+v", s)
	}
	if len(s.Layers) != 2 || s.Layers[0].Bytes != 8192+100 || s.Layers[1].Bytes != 7 {
		t.Errorf("layers: %+v", s.Layers)
	}
	var out bytes.Buffer
	s.WriteSummary(&out)
	for _, want := range []string{"waited for most: rank 1", "wait", "rank-1.json was not closed", "compute", "3 events were dropped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSVGIsXMLWithALanePerRank(t *testing.T) {
	ranks, _, err := Merge(twoRanks(t))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, ranks, "t <&>"); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	lanes := 0
	reds := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch v := tok.(type) {
		case xml.CharData:
			if strings.HasPrefix(string(v), "rank ") {
				lanes++
			}
		case xml.StartElement:
			for _, a := range v.Attr {
				if a.Name.Local == "fill" && a.Value == phaseColours[CatWait] {
					reds++
				}
			}
		}
	}
	if lanes != 2 || reds < 2 { // the legend's and at least one wait
		t.Errorf("lanes %d, red rects %d", lanes, reds)
	}
}

func TestPredictFromStats(t *testing.T) {
	r := &Rank{Stats: map[string]any{
		"links": map[string]any{"overhead_s": 1e-5, "bytes_per_s": 1e9,
			"compute_rates": map[string]any{"merge_ns": 0, "combine_ns": 1, "gather_ns": 0}},
		"plans": []any{map[string]any{"calls": map[string]any{"reduce": 2.0},
			"layers": []any{map[string]any{"layer": 0.0, "degree": 2.0, "out_keys_above": 1000.0,
				"reduce_down": map[string]any{"bytes_sent": 2e6}}}}}}}
	// 2 reduces: 2×2×1 messages × 10 µs + 2e6 B / 1 GB/s (2000 µs) + 2×1000 keys × 1 ns (2 µs)
	got := predictLayers([]*Rank{r})
	if len(got) != 1 || got[0] < 2041.99 || got[0] > 2042.01 {
		t.Errorf("predicted %v µs, want 2042", got)
	}
	if predictLayers([]*Rank{{}}) != nil {
		t.Error("a prediction without links")
	}
}

// A short call's inline phases (args "steps") become nested events when loaded.
func TestInlineStepsExpand(t *testing.T) {
	dir := t.TempDir()
	c := call("kylix_reduce", 3, 100, 50)
	c.Args["steps"] = []any{[]any{"fill", 0, 0, 5}, []any{"combine", 0, 5, 30}, []any{"gather", 0, 35, 15}}
	rankFile(t, dir, 0, 0, 0, []Event{c}, true)
	r, err := Load(filepath.Join(dir, "rank-0.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(Flatten(r))
	if want := "[{100 105 fill 0} {105 135 combine 0} {135 150 gather 0}]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, left := r.Events[0].Args["steps"]; left {
		t.Error("the call keeps its steps argument")
	}
}

// Files written by core/trace with clock offsets merge onto rank 0's clock once: an event the
// two ranks record at one instant lands, after the merge, exactly the claimed offset apart
// (rank 1's clock said to be 5 ms behind rank 0's, though both read the same host clock here).
func TestMergeAppliesTheClockOffsetOnce(t *testing.T) {
	dir := t.TempDir()
	const offNs = 5_000_000
	var trs [2]*trace.Tracer
	for r := range trs {
		tr, err := trace.Open(dir, r, false)
		if err != nil {
			t.Fatal(err)
		}
		trs[r] = tr
	}
	trs[0].SetClock(0, 0, 0, "h")
	trs[1].SetClock(offNs, 100, 1, "h")
	fp := kx.Fingerprint{Kind: kx.KindBarrier}
	t0, t1 := trs[0].Now(), trs[1].Now() // one instant, give or take the two reads
	trs[0].Call(1, fp, t0, t0+1000, 0, 0, 0, 0, nil, nil)
	trs[1].Call(1, fp, t1, t1+1000, 0, 0, 0, 0, nil, nil)
	for _, tr := range trs {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ranks, _, err := Merge(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ts [2]float64
	for _, r := range ranks {
		for _, e := range r.Events {
			if e.Name == "kylix_barrier" {
				ts[r.Rank] = e.TS
			}
		}
	}
	if d := ts[1] - ts[0] - offNs/1000; d < -50 || d > 50 { // µs
		t.Errorf("rank 1's event is %.1f µs after rank 0's, want %d (the offset once)", ts[1]-ts[0], offNs/1000)
	}
}
