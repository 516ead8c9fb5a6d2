package tests

// The timeline (option timeline, kylixrun --timeline DIR) over real processes and sockets:
// the merged trace loads in Python's json, every rank is in it, every call's layer phases lie
// inside it, barrier exits are causally after every rank's entry within the recorded clock
// errors, a straggler is named, and a rank killed with SIGKILL leaves a file that loads and
// is merged. The C program (c/timeline.c) checks kylix_mark's contract and the reduces' values.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

type tlEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	TS   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Args map[string]any `json:"args"`
}

// runTimeline runs kylixrun --timeline DIR -n n [--degrees d] timeline ARGS and returns DIR,
// the output and the exit code.
func runTimeline(t *testing.T, n int, degrees string, args ...string) (string, string, int) {
	t.Helper()
	bin := setup(t)
	prog := program(t, "timeline")
	dir := filepath.Join(t.TempDir(), "tl")
	kargs := []string{"--timeline", dir, "-n", strconv.Itoa(n), "--tag-output", "--job-timeout", "100"}
	if degrees != "" {
		kargs = append(kargs, "--degrees", degrees)
	}
	kargs = append(append(kargs, "--", prog), args...)
	jobSlots <- struct{}{}
	defer func() { <-jobSlots }()
	cmd := exec.Command(filepath.Join(bin, "kylixrun"), kargs...)
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(hardDeadline):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("kylixrun %s: still running after %v; stopped it\n%s", strings.Join(kargs, " "), hardDeadline, out.String())
	}
	return dir, out.String(), cmd.ProcessState.ExitCode()
}

// loadMerged checks DIR/timeline.json with Python's json module, then reads it here.
func loadMerged(t *testing.T, dir, out string) []tlEvent {
	t.Helper()
	path := filepath.Join(dir, "timeline.json")
	if py, err := exec.LookPath("python3"); err == nil {
		if b, err := exec.Command(py, "-c", "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['traceEvents']))", path).CombinedOutput(); err != nil {
			t.Fatalf("python3 json.load(%s): %v\n%s\n%s", path, err, b, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var doc struct {
		TraceEvents []tlEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.TraceEvents
}

func seqOf(e tlEvent) int { f, _ := e.Args["seq"].(float64); return int(f) }

// TestTimelineMerge: 4 ranks, degrees 2x2 (two layers).
func TestTimelineMerge(t *testing.T) {
	dir, out, code := runTimeline(t, 4, "2x2", "8", "-1", "0", "-1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for r := 0; r < 4; r++ {
		if !strings.Contains(out, "r"+strconv.Itoa(r)+" PASS kylix_mark contract (timeline on)") ||
			!strings.Contains(out, "r"+strconv.Itoa(r)+" PASS 8 reduces match") {
			t.Errorf("rank %d did not pass its checks\n%s", r, out)
		}
	}
	if !strings.Contains(out, filepath.Join(dir, "timeline.svg")) {
		t.Errorf("kylixrun did not say where the picture is\n%s", out)
	}
	evs := loadMerged(t, dir, out)
	clockErr := map[int]float64{}
	calls := map[[2]int]tlEvent{} // (pid, seq) -> call
	var steps []tlEvent
	marks := map[int]int{}
	for _, e := range evs {
		switch {
		case e.Name == "kylix_clock":
			clockErr[e.Pid] = e.Args["clock_error_us"].(float64)
		case e.Ph == "X" && e.Tid == 0 && strings.HasPrefix(e.Name, "kylix_"):
			calls[[2]int{e.Pid, seqOf(e)}] = e
		case e.Ph == "X" && e.Tid == 0 && e.Name != "wait":
			steps = append(steps, e)
		case e.Ph == "X" && e.Tid == 2 && e.Name == "compute":
			marks[e.Pid]++
		}
	}
	for r := 0; r < 4; r++ {
		if e, ok := clockErr[r]; !ok || e < 0 {
			t.Errorf("rank %d: no process or no measured clock error in the trace (%v)", r, clockErr)
		}
		if marks[r] != 8 {
			t.Errorf("rank %d: %d compute spans, want 8", r, marks[r])
		}
	}
	// Every reduce has fill, combine and gather of both layers inside it; every phase lies
	// inside its call.
	const slack = 0.002 // µs: the file's rounding
	seen := map[[2]int]map[string]bool{}
	for _, s := range steps {
		k := [2]int{s.Pid, seqOf(s)}
		c, ok := calls[k]
		if !ok {
			t.Errorf("phase %s (rank %d, seq %d) has no call", s.Name, s.Pid, k[1])
			continue
		}
		if s.TS < c.TS-slack || s.TS+s.Dur > c.TS+c.Dur+slack {
			t.Errorf("phase %s [%f,+%f] outside its call %s [%f,+%f] (rank %d)", s.Name, s.TS, s.Dur, c.Name, c.TS, c.Dur, s.Pid)
		}
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][s.Name+strconv.Itoa(int(s.Args["layer"].(float64)))] = true
	}
	reduces := 0
	for k, c := range calls {
		if c.Name != "kylix_reduce" {
			continue
		}
		reduces++
		for _, want := range []string{"fill0", "combine0", "combine1", "gather0", "gather1"} {
			if !seen[k][want] {
				t.Errorf("rank %d reduce seq %d: no %s phase inside it (has %v)", k[0], k[1], want, seen[k])
			}
		}
	}
	if reduces != 4*8 {
		t.Errorf("%d reduce calls in the trace, want 32", reduces)
	}
	// Barriers: no rank leaves before every rank has entered, on the aligned clocks, within the
	// two ranks' recorded errors.
	type span struct{ in, out float64 }
	barriers := map[int]map[int]span{}
	for k, c := range calls {
		if c.Name == "kylix_barrier" {
			if barriers[k[1]] == nil {
				barriers[k[1]] = map[int]span{}
			}
			barriers[k[1]][k[0]] = span{c.TS, c.TS + c.Dur}
		}
	}
	if len(barriers) < 8 {
		t.Errorf("%d barriers in the trace, want at least 8", len(barriers))
	}
	for seq, by := range barriers {
		if len(by) != 4 {
			t.Errorf("barrier seq %d: %d ranks", seq, len(by))
		}
		for a, sa := range by {
			for b, sb := range by {
				if sa.out+clockErr[a]+clockErr[b]+slack < sb.in {
					t.Errorf("barrier seq %d: rank %d left at %.3f µs before rank %d entered at %.3f (errors %.3f, %.3f µs)",
						seq, a, sa.out, b, sb.in, clockErr[a], clockErr[b])
				}
			}
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "timeline.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		if b, err := exec.Command(py, "-c", "import sys, xml.dom.minidom as m; d=m.parse(sys.argv[1]); print(len(d.getElementsByTagName('rect')))", filepath.Join(dir, "timeline.svg")).CombinedOutput(); err != nil {
			t.Errorf("timeline.svg is not XML: %v\n%s", err, b)
		}
	}
	for r := 0; r < 4; r++ {
		if !bytes.Contains(svg, []byte(">rank "+strconv.Itoa(r)+"<")) {
			t.Errorf("timeline.svg has no lane for rank %d", r)
		}
	}
}

// TestTimelineStraggler: rank 2 computes 50 ms longer every step; the summary names it and
// the others' waits carry the time.
func TestTimelineStraggler(t *testing.T) {
	const iters, delayMs = 6, 50
	dir, out, code := runTimeline(t, 4, "direct", strconv.Itoa(iters), "2", strconv.Itoa(delayMs), "-1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "waited for most: rank 2 ") {
		t.Errorf("the summary does not name rank 2 as the one waited for\n%s", out)
	}
	wait := map[int]float64{}
	for _, e := range loadMerged(t, dir, out) {
		if e.Ph == "X" && e.Name == "wait" {
			wait[e.Pid] += e.Dur
		}
	}
	// Each step the others wait for rank 2's message while it sleeps: at least half of that
	// (the margin is their own compute, which is small).
	for r := 0; r < 4; r++ {
		if r == 2 {
			continue
		}
		if wait[r] < 0.5*iters*delayMs*1000 {
			t.Errorf("rank %d waited %.0f µs in all, want at least %d", r, wait[r], iters*delayMs*1000/2)
		}
		if wait[r] <= wait[2] {
			t.Errorf("rank %d waited %.0f µs, no more than the straggler's %.0f", r, wait[r], wait[2])
		}
	}
}

// TestTimelineStallInstant: a wait that makes no progress for KYLIX_STALL_MS is a "stall"
// instant on the waiting rank's lane, naming the rank it waits for (the log's stall line).
func TestTimelineStallInstant(t *testing.T) {
	t.Setenv("KYLIX_STALL_MS", "20")
	dir, out, code := runTimeline(t, 4, "direct", "3", "2", "200", "-1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	stalls := map[int]int{}
	for _, e := range loadMerged(t, dir, out) {
		// Other waits may stall for 20 ms too on a loaded machine (the link probes of the
		// first config): only those waiting for rank 2 count.
		if msg, _ := e.Args["detail"].(string); e.Ph == "i" && e.Name == "stall" && strings.Contains(msg, "from rank 2;") {
			stalls[e.Pid]++
		}
	}
	for r := 0; r < 4; r++ {
		if r != 2 && stalls[r] == 0 {
			t.Errorf("rank %d waited 200 ms for rank 2 three times with KYLIX_STALL_MS=20 and recorded no stall instant naming it (per rank: %v)\n%s", r, stalls, out)
		}
	}
}

// TestTimelineKilledRank: rank 1 kills itself mid-run; its file (no closing bracket) still
// loads and is in the merge kylixrun makes at the end.
func TestTimelineKilledRank(t *testing.T) {
	dir, out, code := runTimeline(t, 4, "", "10", "-1", "0", "1")
	// kylixrun exits with the status it sees first: rank 1's SIGKILL, or a survivor's failure
	// (its reduce fails with KYLIX_ERR_PEER) when that is reaped first.
	if code != 128+int(syscall.SIGKILL) && code != 1 {
		t.Errorf("exit %d, want %d (rank 1's SIGKILL) or 1\n%s", code, 128+int(syscall.SIGKILL), out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "rank-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasSuffix(bytes.TrimSpace(raw), []byte("]")) {
		t.Errorf("rank-1.json is closed: the rank was not killed before finalize?")
	}
	n := 0
	for _, e := range loadMerged(t, dir, out) {
		if e.Pid == 1 && e.Ph == "X" {
			n++
		}
	}
	if n == 0 {
		t.Errorf("the merged trace has no events of the killed rank 1\n%s", out)
	}
	if !strings.Contains(out, "rank-1.json was not closed") {
		t.Errorf("the summary does not say rank 1's file was not closed\n%s", out)
	}
}
