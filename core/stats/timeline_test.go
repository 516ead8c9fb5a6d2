package stats

import (
	"bufio"
	"encoding/json"
	"kylix/core/kx"
	"kylix/core/trace"
	"os"
	"strings"
	"testing"
	"time"
)

// smallReduce drives the recorder's hooks as a 2-rank reduce of one layer does: the data path's
// begin, sends and waits, the algorithm's steps, the end. wait is how long each receive blocks.
func smallReduce(s *Recorder, seq uint64, wait time.Duration) {
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 1}
	down := kx.Tag{Seq: seq, Phase: kx.PhaseDown}
	up := kx.Tag{Seq: seq, Phase: kx.PhaseUp}
	s.Begin(seq, fp)
	s.Step(seq, trace.StepFill, 0)
	s.Step(seq, trace.StepCombine, 0)
	for _, tag := range []kx.Tag{down, up} {
		if tag.Phase == kx.PhaseUp {
			s.Step(seq, trace.StepGather, 0)
		}
		t0 := s.Enter(tag)
		s.Count(tag, 1000, true)
		s.Message(tag, 1, 1000, true, t0, nil)
		t0 = s.Enter(tag)
		if wait > 0 {
			time.Sleep(wait)
		}
		s.Count(tag, 1000, false)
		s.Message(tag, 1, 1000, false, t0, nil)
	}
	s.End(seq, nil)
}

type tlEv struct {
	Name    string
	Ph      string
	Tid     int
	TS, Dur float64
	Args    map[string]any
}

// recordedReduce runs smallReduce on a recorder with a timeline and returns the file's events.
func recordedReduce(t *testing.T, wait time.Duration) []tlEv {
	tl, err := trace.Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	s := NewRecorder()
	s.SetTracer(tl)
	smallReduce(s, 9, wait)
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	return readEvents(t, tl.Path())
}

// readEvents is a timeline file's events.
func readEvents(t *testing.T, path string) []tlEv {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []tlEv
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ",")
		if l == "[" || l == "]" {
			continue
		}
		var e tlEv
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// shortReduce records a reduce with no waits until one runs shorter than inlineCallNs: on a
// loaded machine a preemption can stretch a run past it, and such a call rightly spills.
func shortReduce(t *testing.T) []tlEv {
	for try := 0; try < 20; try++ {
		evs := recordedReduce(t, 0)
		for _, e := range evs {
			if e.Name == "kylix_reduce" && e.Dur*1000 < inlineCallNs {
				return evs
			}
		}
	}
	t.Fatalf("no reduce of 20 ran shorter than %d ns", inlineCallNs)
	return nil
}

// A short call carries its phases in its own event, in order, inside it.
func TestTimelineShortCallInlinesItsPhases(t *testing.T) {
	for _, e := range shortReduce(t) {
		if e.Ph == "X" && e.Tid == 0 && e.Name != "kylix_reduce" && e.Name != "wait" {
			t.Errorf("a short call's phase as an event of its own: %+v", e)
		}
		if e.Name != "kylix_reduce" {
			continue
		}
		steps, _ := e.Args["steps"].([]any)
		names, end := "", 0.0
		for _, s := range steps {
			f := s.([]any)
			names += f[0].(string) + " "
			start, dur := f[2].(float64), f[3].(float64)
			if start < end-0.002 || start+dur > e.Dur+0.002 {
				t.Errorf("phase %v overlaps the one before or leaves the call (%v µs)", f, e.Dur)
			}
			end = start + dur
		}
		if names != "fill combine gather " {
			t.Errorf("inline phases %q", names)
		}
	}
}

// A call's end read a little before its last phase began (kx.FastMono may step back by
// nanoseconds when its first line is fitted) ends that phase and the call no earlier than the
// phase's start: nothing negative is packed inline (a negative duration would spill into the
// packed start's bits) or written.
func TestTimelineEndBeforeLastPhase(t *testing.T) {
	tl, err := trace.Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	s := NewRecorder()
	s.SetTracer(tl)
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 1}
	s.Begin(5, fp)
	s.Step(5, trace.StepFill, 0)
	for t0 := time.Now(); time.Since(t0) < 2*time.Microsecond; { // a phase of some length, inline
	}
	s.Step(5, trace.StepGather, 0)
	s.mu.Lock()
	base := -tl.AtMono(0)                               // the monotonic reading of the timeline's zero (AtMono(0) moves no floor)
	s.endLocked(5, nil, base+s.find(5).tl.stepStart-30) // the gather's start less 30 ns
	s.mu.Unlock()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	for _, e := range readEvents(t, tl.Path()) {
		if e.Name != "kylix_reduce" {
			continue
		}
		if e.Dur < 0 {
			t.Errorf("the call's duration %v", e.Dur)
		}
		steps, _ := e.Args["steps"].([]any)
		if len(steps) != 2 {
			t.Fatalf("inline phases %v", steps)
		}
		for _, st := range steps {
			f := st.([]any)
			if start, dur := f[2].(float64), f[3].(float64); start < 0 || dur < 0 || start+dur > e.Dur+0.002 {
				t.Errorf("phase %v in a call of %v µs", f, e.Dur)
			}
		}
		return
	}
	t.Fatal("no kylix_reduce event")
}

// A long call's phases and waits are events of their own, nested in it.
func TestTimelineHooksNestPhasesInTheCall(t *testing.T) {
	evs := recordedReduce(t, 3*time.Millisecond) // waits long enough to be recorded
	var call *tlEv
	var steps, waits []tlEv
	for _, e := range evs {
		switch {
		case e.Name == "kylix_reduce":
			call = &e
		case e.Name == "wait":
			waits = append(waits, e)
		case e.Ph == "X" && e.Tid == 0:
			steps = append(steps, e)
		}
	}
	if call == nil || call.Args["bytes_sent"].(float64) != 2000 || call.Args["bytes_recv"].(float64) != 2000 || call.Args["seq"].(float64) != 9 {
		t.Fatalf("call: %+v", call)
	}
	names := ""
	for _, st := range append(steps, waits...) {
		names += st.Name + " "
		if st.TS < call.TS || st.TS+st.Dur > call.TS+call.Dur+0.002 {
			t.Errorf("%s [%v,+%v] outside the call [%v,+%v]", st.Name, st.TS, st.Dur, call.TS, call.Dur)
		}
	}
	if names != "fill combine gather wait wait " {
		t.Errorf("phases and waits: %q", names)
	}
	// each wait inside its phase: combine's before gather's
	if waits[0].TS < steps[1].TS || waits[0].TS+waits[0].Dur > steps[1].TS+steps[1].Dur+0.002 {
		t.Errorf("the down wait is not inside combine: %+v %+v", waits[0], steps[1])
	}
}

// BenchmarkSmallReduceHooks: what the hooks cost a small reduce, timeline off and on (the
// difference is the timeline's cost on the call path; the writer runs beside it).
func BenchmarkSmallReduceHooks(b *testing.B) {
	benchHooks(b, func(s *Recorder, i int) { smallReduce(s, uint64(i), 0) })
}

// benchHooks runs call on a recorder with the timeline off, then on.
func benchHooks(b *testing.B, call func(s *Recorder, i int)) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			s := NewRecorder()
			if on {
				tl, err := trace.Open(b.TempDir(), 0, false)
				if err != nil {
					b.Fatal(err)
				}
				defer tl.Close()
				tl.SetClock(0, 0, 0, "h")
				s.SetTracer(tl)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				call(s, i)
			}
		})
	}
}

// pathReduce drives the recorder as core's data path (core/wire.go) does for a 2-rank reduce
// of one layer whose messages land before they are waited for: each send is small (no clock),
// the combine waits for a prefix of the peer's message, then for all of it (counted), and the
// gather waits for the answer.
func pathReduce(s *Recorder, seq uint64) {
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Plan: 1}
	down := kx.Tag{Seq: seq, Phase: kx.PhaseDown}
	up := kx.Tag{Seq: seq, Phase: kx.PhaseUp}
	bufs := [][]byte{make([]byte, 0, 1000)[:1000]}
	s.Begin(seq, fp)
	s.Step(seq, trace.StepFill, 0)
	for _, tag := range []kx.Tag{down, up} {
		if tag.Phase == kx.PhaseUp {
			s.Step(seq, trace.StepGather, 0)
		} else {
			s.Step(seq, trace.StepCombine, 0)
		}
		t0 := s.EnterSend(tag, bufs)
		s.Count(tag, 1000, true)
		s.Message(tag, 1, 1000, true, t0, nil)
		if tag.Phase == kx.PhaseDown {
			t0 = s.EnterWait(tag, 1, 500)
			s.Message(tag, 1, -1, false, t0, nil)
		}
		t0 = s.EnterWait(tag, 1, -1)
		s.Count(tag, 1000, false)
		s.Message(tag, 1, 1000, false, t0, nil)
	}
	s.End(seq, nil)
}

// BenchmarkAllreduceHooks: what the hooks cost an 8-float allreduce on 2 ranks (one send, one
// receive, no plan), timeline off and on.
func BenchmarkAllreduceHooks(b *testing.B) {
	fp := kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Count: 8}
	benchHooks(b, func(s *Recorder, i int) {
		seq := uint64(i + 1)
		tag := kx.Tag{Seq: seq, Phase: kx.PhaseSmall}
		s.Begin(seq, fp)
		t0 := s.EnterSend(tag, nil)
		s.Count(tag, 32, true)
		s.Message(tag, 1, 32, true, t0, nil)
		t0 = s.Enter(tag)
		s.Count(tag, 32, false)
		s.Message(tag, 1, 32, false, t0, nil)
		s.End(seq, nil)
	})
}

// BenchmarkPathReduceHooks: what the data path's and the algorithm's hooks cost a small
// reduce (pathReduce), timeline off and on. Run with -cpu 1 for a rank under kylixrun
// (GOMAXPROCS=1): the writer's batches then take the benchmark's processor, as a rank's.
func BenchmarkPathReduceHooks(b *testing.B) {
	benchHooks(b, func(s *Recorder, i int) { pathReduce(s, uint64(i+1)) })
}
