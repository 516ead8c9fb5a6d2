package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"kylix/core/kx"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// readLines parses every line of a rank file as JSON (the array's brackets apart), as a
// reader of a killed rank's file must.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ",")
		if l == "[" || l == "]" || l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestFileIsJSONAndHasEveryKind(t *testing.T) {
	dir := t.TempDir()
	tr, err := Open(filepath.Join(dir, "sub"), 3, false)
	if err != nil {
		t.Fatal(err)
	}
	tr.SetClock(1500, 250, 3, `host "quoted"`)
	tag := kx.Tag{Seq: 7, Layer: 1, Phase: kx.PhaseDown}
	tr.Step(7, StepCombine, 1, 100, 900)
	tr.Message(tag, 2, 4096, false, 200, 800, nil)
	tr.Message(tag, 2, 4096, true, 150, 160, nil)
	tr.Call(7, kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F64), Op: uint16(kx.Sum), Width: 1, Plan: 5}, 50, 1000, 4096, 4096, 10, 12,
		&[InlineSteps]int64{InlineStep(0, 100, StepFill, 0), InlineStep(100, 850, StepGather, 1)},
		kx.Errorf(kx.CodePeer, "rank 2 \x01 died"))
	var perLayer [MaxCounterLayers]int64
	perLayer[0], perLayer[1] = 10, 20
	tr.Counter(1000, &perLayer, 2)
	if err := tr.Mark("fwd\n\"x\"", MarkBegin); err != nil {
		t.Fatal(err)
	}
	if err := tr.Mark("fwd\n\"x\"", MarkEnd); err != nil {
		t.Fatal(err)
	}
	if err := tr.Mark("tick", MarkInstant); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(tr.Path())
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil { // closed: a complete JSON array
		t.Fatalf("closed file is not a JSON array: %v\n%s", err, raw)
	}
	byName := map[string]map[string]any{}
	for _, m := range readLines(t, tr.Path()) {
		byName[m["name"].(string)] = m
	}
	call := byName["kylix_reduce"]
	if call == nil {
		t.Fatalf("no call event: %v", byName)
	}
	// ts on the local clock, in µs: the offset (1500 ns) is the clock record's alone, or the
	// merge would apply it twice
	if call["ts"].(float64) != 0.05 || call["dur"].(float64) != 0.95 {
		t.Errorf("call ts/dur = %v/%v, want 0.05/0.95", call["ts"], call["dur"])
	}
	args := call["args"].(map[string]any)
	if args["status"] != "peer failed" || args["plan"].(float64) != 5 || args["keys_in"].(float64) != 12 || args["dtype"] != "f64" {
		t.Errorf("call args: %v", args)
	}
	if st := fmt.Sprint(args["steps"]); st != "[[fill 0 0 0.1] [gather 1 0.1 0.85]]" {
		t.Errorf("inline steps: %s", st)
	}
	if byName["peer failed"] == nil {
		t.Errorf("no instant for the peer failure")
	}
	w := byName["wait"]["args"].(map[string]any)
	if w["peer"].(float64) != 2 || w["bytes"].(float64) != 4096 || w["layer"].(float64) != 1 || w["phase"] != "down" {
		t.Errorf("wait args: %v", w)
	}
	if byName["send"]["tid"].(float64) != laneSends || byName["fwd\n\"x\""]["tid"].(float64) != laneUser {
		t.Errorf("lanes: send %v, mark %v", byName["send"]["tid"], byName["fwd\n\"x\""]["tid"])
	}
	if c := byName["bytes"]["args"].(map[string]any); c["L0"].(float64) != 10 || c["L1"].(float64) != 20 {
		t.Errorf("counter: %v", c)
	}
	clk := byName["kylix_clock"]["args"].(map[string]any)
	if clk["clock_error_us"].(float64) != 0.25 || clk["host"] != `host "quoted"` ||
		math.Abs(clk["origin_unix_ns"].(float64)-float64(tr.base.UnixNano()+1500)) > 1000 { // a float64 of ~1.8e18 holds it to 256 ns
		t.Errorf("clock record: %v", clk)
	}
	if byName["kylix_end"]["args"].(map[string]any)["dropped"].(float64) != 0 {
		t.Errorf("end record: %v", byName["kylix_end"])
	}
}

func TestMarkNesting(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Mark("a", MarkEnd); kx.CodeOf(err) != kx.CodeState {
		t.Errorf("END without BEGIN: %v", err)
	}
	tr.Mark("a", MarkBegin)
	tr.Mark("b", MarkBegin)
	if err := tr.Mark("a", MarkEnd); kx.CodeOf(err) != kx.CodeState || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("END of an outer span: %v", err)
	}
	if err := tr.Mark("b", MarkEnd); err != nil {
		t.Error(err)
	}
	if err := tr.Mark("a", MarkEnd); err != nil {
		t.Error(err)
	}
	if err := tr.Mark("a", 3); kx.CodeOf(err) != kx.CodeArg {
		t.Errorf("kind 3: %v", err)
	}
	for i := 0; i < maxOpenSpans; i++ {
		if err := tr.Mark("deep", MarkBegin); err != nil {
			t.Fatalf("span %d: %v", i, err)
		}
	}
	if err := tr.Mark("deep", MarkBegin); kx.CodeOf(err) != kx.CodeState {
		t.Errorf("span %d: %v", maxOpenSpans+1, err)
	}
}

// A writer that cannot keep up (here: never runs, the buffer is full) drops and counts; the
// caller never blocks.
func TestFullBufferDropsAndCounts(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	tr.spare = nil // as while the writer holds it
	tr.mu.Unlock()
	start := time.Now()
	for i := 0; i < 3*BufferEvents; i++ {
		tr.Instant("x", int64(i), "")
	}
	if d := tr.Drops(); d != 2*BufferEvents {
		t.Errorf("drops = %d, want %d", d, 2*BufferEvents)
	}
	if time.Since(start) > 10*time.Second { // fail-safe only
		t.Errorf("recording blocked")
	}
	tr.mu.Lock()
	tr.spare = make([]Event, 0, BufferEvents)
	tr.mu.Unlock()
	tr.Close()
	lines := readLines(t, tr.Path())
	end := lines[len(lines)-1]
	if end["name"] != "kylix_end" || end["args"].(map[string]any)["dropped"].(float64) != 2*BufferEvents {
		t.Errorf("end record: %v", end)
	}
}

// A rank killed before Close leaves lines that all parse (what was flushed).
func TestUnclosedFileLoadsLineByLine(t *testing.T) {
	tr, err := Open(t.TempDir(), 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(filepath.Base(tr.Path()), "-join") {
		t.Errorf("a joiner's file: %s", tr.Path())
	}
	tr.SetClock(0, -1, 1, "h")
	tr.Instant("before kill", 5, "")
	deadline := time.Now().Add(10 * time.Second)
	for tr.written.Load() == 0 && time.Now().Before(deadline) { // the periodic flush
		time.Sleep(10 * time.Millisecond)
	}
	lines := readLines(t, tr.Path()) // Close not called: no closing bracket
	found := false
	for _, l := range lines {
		found = found || l["name"] == "before kill"
	}
	if !found {
		t.Errorf("flushed event not in the unclosed file: %v", lines)
	}
	tr.Close()
}

// fakeJob runs n ranks' Align as goroutines whose clocks are the real one plus a skew.
type fakeRank struct {
	rank int
	job  *fakeJob
}

type fakeJob struct {
	n     int
	mu    sync.Mutex
	cond  *sync.Cond
	gen   int
	in    int
	val   []byte
	delay time.Duration
}

func (r fakeRank) Rank() int { return r.rank }

// meet returns once every rank has called it (one generation); before runs on arrival and
// after on leaving, both under the job's lock.
func (j *fakeJob) meet(before, after func()) {
	j.mu.Lock()
	defer j.mu.Unlock()
	g := j.gen
	before()
	j.in++
	if j.in == j.n {
		j.in, j.gen = 0, j.gen+1
		j.cond.Broadcast()
	}
	for g == j.gen {
		j.cond.Wait()
	}
	after()
}

func (r fakeRank) Barrier() error {
	r.job.meet(func() {}, func() {})
	return nil
}

// Bcast: the root leaves its value, every rank takes it; a rank leaving the meeting cannot
// see the next round's value, which needs this rank's arrival first.
func (r fakeRank) Bcast(b []byte, root int) error {
	j := r.job
	time.Sleep(j.delay) // the message's way
	j.meet(func() {
		if r.rank == root {
			j.val = append(j.val[:0], b...)
		}
	}, func() { copy(b, j.val) })
	return nil
}

func TestAlignRecoversSkewWithinItsBound(t *testing.T) {
	skews := []int64{0, 3e9, -7e8, 123456789}
	j := &fakeJob{n: len(skews), delay: 200 * time.Microsecond}
	j.cond = sync.NewCond(&j.mu)
	base := time.Now()
	type res struct{ off, err int64 }
	out := make([]res, len(skews))
	errs := make([]error, len(skews))
	var wg sync.WaitGroup
	for r := range skews {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			now := func() int64 { return int64(time.Since(base)) + skews[r] }
			out[r].off, out[r].err, errs[r] = Align(fakeRank{r, j}, now, AlignRounds)
		}(r)
	}
	wg.Wait()
	for r := range skews {
		if errs[r] != nil {
			t.Fatal(errs[r])
		}
		// rank r's clock + offset must be rank 0's: offset ≈ −skew within the bound
		miss := out[r].off + skews[r]
		if miss < 0 {
			miss = -miss
		}
		if out[r].err < 0 || miss > out[r].err {
			t.Errorf("rank %d: offset %d for skew %d: off by %d ns, bound %d ns", r, out[r].off, skews[r], miss, out[r].err)
		}
	}
	if out[0].off != 0 || out[0].err != 0 {
		t.Errorf("rank 0: %+v", out[0])
	}
}

func TestAlignFailsWithTheComm(t *testing.T) {
	bad := errors.New("peer gone")
	_, e, err := Align(failing{bad}, func() int64 { return 0 }, 3)
	if !errors.Is(err, bad) || e != -1 {
		t.Errorf("err %v, bound %d", err, e)
	}
}

type failing struct{ err error }

func (f failing) Rank() int               { return 1 }
func (f failing) Barrier() error          { return f.err }
func (f failing) Bcast([]byte, int) error { return f.err }

func TestRecordAllocatesNothing(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tag := kx.Tag{Seq: 1, Phase: kx.PhaseUp}
	n := testing.AllocsPerRun(1000, func() {
		tr.Message(tag, 1, 8, false, 1, 2, nil)
		tr.Step(1, StepGather, 0, 1, 2)
		tr.Call(1, kx.Fingerprint{Kind: kx.KindReduce}, 1, 2, 8, 8, 0, 0, nil, nil)
	})
	if n != 0 {
		t.Errorf("%v allocations a call's events", n)
	}
}

// The timeline's clock (kx.FastMono) stays with the runtime's monotonic clock: never ahead of
// it (a phase never ends after its call, whose end is a monotonic reading), never before the
// latest At (a phase never starts before its call), and behind it by little, also long after
// the last At (kylix_mark between calls).
func TestClockFollowsMonotonic(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetClock(0, 0, 0, "h")
	// At's readings (time.Time's) and kx.MonoNow's differ by how far apart Open read the two
	const slack = 2000 // ns
	behind := 0
	for i := 0; i < 2000; i++ {
		start := tr.At(time.Now())
		a := kx.MonoNow() - tr.baseMono
		n := tr.Now()
		b := kx.MonoNow() - tr.baseMono
		if n < start {
			t.Fatalf("reading %d: %d before the call's start %d", i, n, start)
		}
		if n > b+slack {
			t.Fatalf("reading %d: %d ahead of the monotonic clock's %d", i, n, b)
		}
		if n < a-slack {
			behind++ // a preemption between the reads, or a line far behind
		}
		if i%200 == 0 {
			time.Sleep(time.Millisecond) // the counter's line is fitted again meanwhile
		}
	}
	if behind > 20 { // a loaded machine preempts now and then; a drifting line would miss always
		t.Errorf("%d of 2000 readings more than %d ns behind the monotonic clock", behind, slack)
	}
	for range 2 { // far from the last At
		time.Sleep(20 * time.Millisecond)
		a := kx.MonoNow() - tr.baseMono
		n := tr.Now()
		b := kx.MonoNow() - tr.baseMono
		if n < a-slack || n > b+slack {
			t.Errorf("20 ms after the last At: %d, monotonic [%d, %d]", n, a, b)
		}
	}
}

func TestAppendNumbersMatchStrconv(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 99, 100, 101, 999, 1000, 12345, 99999, 100000, 1 << 32, math.MaxInt64, -1, -10, -12345, math.MinInt64 + 1}
	for p := int64(1); p > 0 && p < math.MaxInt64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1)
	}
	for v := int64(0); v < 1_001_000; v += 997 { // the look-up tables' range (upTo999, frac3)
		vals = append(vals, v, -v)
	}
	for _, v := range vals {
		if got, want := string(appendUint(nil, math.MaxUint64-uint64(max(v, 0)))), fmt.Sprint(uint64(math.MaxUint64)-uint64(max(v, 0))); got != want {
			t.Errorf("appendUint = %q, want %q", got, want)
		}
		if got, want := string(appendInt([]byte("x"), v)), "x"+fmt.Sprint(v); got != want {
			t.Errorf("appendInt(%d) = %q", v, got)
		}
		want := fmt.Sprintf("%d.%03d", v/1000, v%1000)
		if v < 0 {
			want = fmt.Sprintf("-%d.%03d", -v/1000, -v%1000)
		}
		if got := string(appendMicros(nil, v)); got != want {
			t.Errorf("appendMicros(%d) = %q, want %q", v, got, want)
		}
	}
}

// BenchmarkEncodeCall: the writer's work for a small call's event (its phases inline).
func BenchmarkEncodeCall(b *testing.B) {
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 1}
	e := Event{Kind: kindCall, Name: CallName(fp.Kind), TS: 12_345_678_901, Dur: 3900, Seq: 12345, FP: fp}
	e.Steps[0] = InlineStep(0, 500, StepFill, 0)
	e.Steps[1] = InlineStep(500, 1500, StepCombine, 0)
	e.Steps[2] = InlineStep(2000, 1500, StepGather, 0)
	e.N[0], e.N[1], e.N[2], e.N[3] = 1000, 1000, 248, 248
	var out []byte
	c := &encoder{pid: 1}
	for i := 0; i < b.N; i++ {
		out = e.encode(out[:0], c)
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkNow: a reading of the timeline's clock.
func BenchmarkNow(b *testing.B) {
	tr, err := Open(b.TempDir(), 0, false)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	tr.SetClock(0, 0, 0, "h")
	var s int64
	for i := 0; i < b.N; i++ {
		s += tr.Now()
	}
	_ = s
}

// Calls, messages and counters recorded from several goroutines at once (a comm's sends run
// beside its caller; comms made by a shrink share the timeline) all land whole, and the
// counter's last value is in the file.
func TestConcurrentRecording(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tr.SetClock(0, 0, 0, "h")
	const per = 300 // every event fits the buffer: no drop, whether the writer runs or not
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var bytes [MaxCounterLayers]int64
			for i := 0; i < per; i++ {
				seq := uint64(g*per + i)
				start := tr.At(time.Now())
				tr.Message(kx.Tag{Seq: seq, Phase: kx.PhaseDown}, 1, 64, false, tr.Now(), tr.Now(), nil)
				bytes[0] = int64(seq)
				tr.Call(seq, kx.Fingerprint{Kind: kx.KindReduce}, start, tr.At(time.Now()), 64, 64, 0, 0, nil, nil)
				tr.Counter(tr.Now(), &bytes, 1)
			}
		}(g)
	}
	wg.Wait()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	calls, waits := 0, 0
	for _, m := range readLines(t, tr.Path()) {
		switch m["name"] {
		case "kylix_reduce":
			calls++
		case "wait":
			waits++
		case "kylix_end":
			if d := m["args"].(map[string]any)["dropped"].(float64); d != 0 {
				t.Errorf("dropped %v", d)
			}
		}
	}
	if calls != 4*per || waits != 4*per {
		t.Errorf("%d calls, %d waits, want %d each", calls, waits, 4*per)
	}
}

// The bytes counter is recorded at most once a millisecond; its last value, when it moved
// since, is recorded at Close.
func TestCounterFinalValue(t *testing.T) {
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var bytes [MaxCounterLayers]int64
	bytes[0], bytes[1] = 10, 1
	tr.Counter(1000, &bytes, 2) // the first: recorded
	bytes[0] = 20
	tr.Counter(1500, &bytes, 2) // not due
	bytes[0] = 30
	tr.Counter(1800, &bytes, 2) // not due
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, m := range readLines(t, tr.Path()) {
		if m["name"] == "bytes" {
			got = append(got, m["args"].(map[string]any)["L0"].(float64))
		}
	}
	if len(got) != 2 || got[0] != 10 || got[1] != 30 {
		t.Errorf("counter values %v, want [10 30]", got)
	}
}

// The encoder reuses a call's arguments only while they are the same: a line encoded after
// others matches the line a fresh encoder writes for the same event.
func TestCallArgsReusedOnlyWhenSame(t *testing.T) {
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 3}
	base := Event{Kind: kindCall, Name: CallName(fp.Kind), TS: 1000, Dur: 500, Seq: 1, FP: fp}
	base.N[0], base.N[1], base.N[2], base.N[3] = 100, 200, 25, 50
	vary := []func(e *Event){
		func(e *Event) {},
		func(e *Event) { e.N[0]++ },
		func(e *Event) { e.N[3] = 0; e.N[2] = 0 },
		func(e *Event) { e.FP.Plan = 4 },
		func(e *Event) { e.FP.Op = uint16(kx.Max) },
		func(e *Event) { e.FP.Kind, e.FP.Plan, e.FP.Count = kx.KindAllreduce, 0, 8 },
		func(e *Event) { e.N[4], e.Msg = int64(kx.CodePeer), "rank 1 died" },
		func(e *Event) { e.Seq, e.TS = 99, 5000 },
	}
	c := &encoder{pid: 2}
	for round := 0; round < 2; round++ { // each change after every other
		for i, f := range vary {
			e := base
			f(&e)
			got := string(e.encode(nil, c))
			want := string(e.encode(nil, &encoder{pid: 2}))
			if got != want {
				t.Fatalf("round %d, event %d: reused %q, fresh %q", round, i, got, want)
			}
		}
	}
}

// The writer runs when a call lets it in, at every flushCalls-th collective: with its clock
// stopped and the buffers far from half full, nothing else wakes it.
func TestWriterLetInAtSharedSequenceNumbers(t *testing.T) {
	old := flushEvery
	flushEvery = time.Hour
	defer func() { flushEvery = old }()
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	fp := kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Count: 8}
	for seq := uint64(1); seq <= flushCalls; seq++ {
		tr.Call(seq, fp, int64(seq)*1000, int64(seq)*1000+500, 32, 32, 0, 0, nil, nil)
	}
	deadline := time.Now().Add(20 * time.Second) // fail-safe: the writer needs only a turn
	for tr.written.Load() < flushCalls && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := tr.written.Load(); n != flushCalls {
		t.Fatalf("written after the %d-th call: %d events, want %d", flushCalls, n, flushCalls)
	}
}

// BenchmarkFlushCalls: the writer's work for a small call's event, encoding and writing to the
// file (a batch of flushCalls of them at a time, as letWriterRun lets it in), per event.
func BenchmarkFlushCalls(b *testing.B) {
	tr, err := Open(b.TempDir(), 0, false)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 1}
	var steps [InlineSteps]int64
	steps[0] = InlineStep(0, 290, StepFill, 0)
	steps[1] = InlineStep(290, 1392, StepCombine, 0)
	steps[2] = InlineStep(1682, 1122, StepGather, 0)
	var out []byte
	ts := int64(137_074_121)
	b.ResetTimer()
	for i := 0; i < b.N; i += flushCalls {
		b.StopTimer()
		for j := 0; j < flushCalls; j++ {
			ts += 3300 + int64(j%7)*13
			tr.mu.Lock()
			if e := tr.slot(); e != nil {
				e.Kind, e.Name, e.TS, e.Dur, e.Seq, e.FP = kindCall, CallName(fp.Kind), ts, 2804+int64(j%5)*11, uint64(i+j), fp
				e.Steps = steps
				e.N[0], e.N[1], e.N[2], e.N[3] = 988, 988, 247, 247
			}
			tr.mu.Unlock()
		}
		b.StartTimer()
		out = tr.flush(out[:0])
	}
}
