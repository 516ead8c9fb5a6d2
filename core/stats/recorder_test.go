package stats

import (
	"encoding/json"
	"errors"
	"kylix/core/kx"
	"kylix/core/trace"
	"math/rand/v2"
	"testing"
	"time"
)

// The recorder against a model written here from kylix_stats_json's description
// (include/kylix.h): each message counts for its collective's kind and, for a plan's collective
// (config, reduce, config_reduce), for that plan: "small" messages as the plan's agree traffic,
// "links" ones as its links traffic, the rest in its layer's slot (config; reduce_down and
// reduce_up; config_reduce_down and config_reduce_up, the up phase going up and everything else
// down). Messages of no running collective count in the totals only.

type modelPlan struct {
	createdBy    string
	calls        PlanCalls
	agree, links Traffic
	layers       map[int]map[string]Traffic
}

type model struct {
	kinds  map[string]*KindStats
	plans  map[uint32]*modelPlan
	order  []uint32
	orphan Traffic
}

func newModel() *model {
	return &model{kinds: map[string]*KindStats{}, plans: map[uint32]*modelPlan{}}
}

func traffic(n int, sent bool) Traffic {
	if sent {
		return Traffic{BytesSent: uint64(n), MsgsSent: 1}
	}
	return Traffic{BytesRecv: uint64(n), MsgsRecv: 1}
}

func planKind(k kx.Kind) bool {
	return k == kx.KindConfig || k == kx.KindReduce || k == kx.KindConfigReduce
}

func slotName(k kx.Kind, ph kx.Phase) string {
	dir := "down"
	if ph == kx.PhaseUp {
		dir = "up"
	}
	switch k {
	case kx.KindConfig:
		return "config"
	case kx.KindReduce:
		return "reduce_" + dir
	}
	return "config_reduce_" + dir
}

func (m *model) plan(id uint32, k kx.Kind) *modelPlan {
	p := m.plans[id]
	if p == nil {
		p = &modelPlan{createdBy: k.String(), layers: map[int]map[string]Traffic{}}
		m.plans[id] = p
		m.order = append(m.order, id)
	}
	return p
}

func (m *model) count(k kx.Kind, plan uint32, tag kx.Tag, n int, sent bool) {
	u := traffic(n, sent)
	ks := m.kinds[k.String()]
	if ks == nil {
		ks = &KindStats{}
		m.kinds[k.String()] = ks
	}
	ks.Traffic.Add(u)
	if !planKind(k) {
		return
	}
	p := m.plan(plan, k)
	switch tag.Phase {
	case kx.PhaseSmall:
		p.agree.Add(u)
	case kx.PhaseLinks:
		p.links.Add(u)
	default:
		l := p.layers[int(tag.Layer)]
		if l == nil {
			l = map[string]Traffic{}
			p.layers[int(tag.Layer)] = l
		}
		t := l[slotName(k, tag.Phase)]
		t.Add(u)
		l[slotName(k, tag.Phase)] = t
	}
}

func (m *model) end(k kx.Kind, plan uint32, failed bool) {
	ks := m.kinds[k.String()]
	if ks == nil {
		ks = &KindStats{}
		m.kinds[k.String()] = ks
	}
	ks.Calls++
	if failed {
		ks.Errors++
	}
	if !planKind(k) {
		return
	}
	p := m.plan(plan, k)
	switch k {
	case kx.KindConfig:
		p.calls.Config++
	case kx.KindReduce:
		p.calls.Reduce++
	case kx.KindConfigReduce:
		p.calls.ConfigReduce++
	}
	if failed {
		p.calls.Errors++
	}
}

func layerSlot(l LayerTraffic, slot string) Traffic {
	return map[string]Traffic{"config": l.Config, "reduce_down": l.ReduceDown, "reduce_up": l.ReduceUp,
		"config_reduce_down": l.ConfigReduceDown, "config_reduce_up": l.ConfigReduceUp}[slot]
}

// compare checks a snapshot against the model.
func (m *model) compare(t *testing.T, st Stats) {
	t.Helper()
	total := m.orphan
	for k := 0; k < kx.NumKinds; k++ {
		name := kx.Kind(k).String()
		got, ok := st.Collectives[name]
		if !ok {
			t.Fatalf("collectives lacks %q", name)
		}
		want := KindStats{}
		if w := m.kinds[name]; w != nil {
			want = *w
		}
		if got.Calls != want.Calls || got.Errors != want.Errors || got.Traffic != want.Traffic {
			t.Fatalf("collectives[%q] = %+v, want calls %d errors %d traffic %+v", name, got, want.Calls, want.Errors, want.Traffic)
		}
		total.Add(want.Traffic)
	}
	if st.Totals != total {
		t.Fatalf("totals %+v, want %+v", st.Totals, total)
	}
	if len(st.Plans) != len(m.order) {
		t.Fatalf("%d plans, want %d", len(st.Plans), len(m.order))
	}
	for i, id := range m.order {
		got, want := st.Plans[i], m.plans[id]
		if got.ID != id || got.CreatedBy != want.createdBy || got.Calls != want.calls || got.Agree != want.agree || got.Links != want.links {
			t.Fatalf("plan %d (#%d): %+v, want created by %s, calls %+v, agree %+v, links %+v", id, i, got, want.createdBy, want.calls, want.agree, want.links)
		}
		for l := range max(len(got.Layers), len(want.layers)) {
			for _, slot := range []string{"config", "reduce_down", "reduce_up", "config_reduce_down", "config_reduce_up"} {
				var g Traffic
				if l < len(got.Layers) {
					g = layerSlot(got.Layers[l].LayerTraffic, slot)
				}
				if w := want.layers[l][slot]; g != w {
					t.Fatalf("plan %d, layer %d, %s: %+v, want %+v", id, l, slot, g, w)
				}
			}
		}
	}
}

var (
	someKinds  = []kx.Kind{kx.KindConfig, kx.KindReduce, kx.KindConfigReduce, kx.KindAllreduce, kx.KindBcast, kx.KindBarrier, kx.KindAgree, kx.KindInvalid}
	somePhases = []kx.Phase{kx.PhaseConfig, kx.PhaseDown, kx.PhaseUp, kx.PhaseConfigDown, kx.PhaseSmall, kx.PhaseBcast, kx.PhaseDense, kx.PhaseLinks}
)

// play runs collectives of random kinds, plans and messages (some overlapping, some messages
// of no running collective) on r and the model alike.
func play(r *Recorder, m *model, rng *rand.Rand, seq *uint64, plans uint32, collectives int) {
	type running struct {
		seq  uint64
		kind kx.Kind
		plan uint32
	}
	var open []running
	for i := 0; i < collectives || len(open) > 0; i++ {
		if i < collectives && (len(open) == 0 || rng.IntN(3) != 0) {
			*seq++
			c := running{seq: *seq, kind: someKinds[rng.IntN(len(someKinds))], plan: 1 + rng.Uint32N(plans)}
			r.Begin(c.seq, kx.Fingerprint{Kind: c.kind, Plan: c.plan})
			if planKind(c.kind) {
				m.plan(c.plan, c.kind)
			}
			open = append(open, c)
		}
		for range rng.IntN(6) {
			c := open[rng.IntN(len(open))]
			// Now and then a layer past ownLayers, which the running collective counts under
			// the lock.
			layer := rng.IntN(4)
			if rng.IntN(10) == 0 {
				layer = ownLayers + rng.IntN(3) - 1
			}
			tag := kx.Tag{Seq: c.seq, Layer: uint8(layer), Phase: somePhases[rng.IntN(len(somePhases))]}
			n, sent := 1+rng.IntN(5000), rng.IntN(2) == 0
			if rng.IntN(20) == 0 { // of no collective running here
				tag.Seq = 1 << 40
				m.orphan.Add(traffic(n, sent))
			} else {
				m.count(c.kind, c.plan, tag, n, sent)
			}
			r.Enter(tag)
			r.Count(tag, n, sent)
		}
		if rng.IntN(2) == 0 {
			k := rng.IntN(len(open))
			c := open[k]
			open = append(open[:k], open[k+1:]...)
			var err error
			if rng.IntN(5) == 0 {
				err = errors.New("failed")
			}
			r.End(c.seq, err)
			m.end(c.kind, c.plan, err != nil)
		}
	}
}

func TestRecorderCounts(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r, m := NewRecorder(), newModel()
		var seq uint64
		play(r, m, rand.New(rand.NewPCG(seed, 1)), &seq, 6, 200)
		m.compare(t, r.Snapshot())
		if r.planActive != 0 { // every collective ended: Enter must take its fast path again
			t.Fatalf("seed %d: planActive %d after every collective ended", seed, r.planActive)
		}
	}
}

// planActive counts the running collectives with phase slots, also when one is begun again
// (its new record replaces the old) or never ended (the 65th closes the oldest); while it is
// zero and the timeline is off, entering a phase takes no lock (idle).
func TestRecorderPlanActive(t *testing.T) {
	r := NewRecorder()
	r.Begin(1, kx.Fingerprint{Kind: kx.KindAllreduce})
	if !r.idle() {
		t.Fatal("an allreduce alone: not idle")
	}
	r.Begin(2, kx.Fingerprint{Kind: kx.KindReduce, Plan: 1})
	r.Begin(2, kx.Fingerprint{Kind: kx.KindReduce, Plan: 1}) // begun again
	if r.idle() || r.planActive != 1 {
		t.Fatalf("a reduce running: idle %v, planActive %d", r.idle(), r.planActive)
	}
	r.Enter(kx.Tag{Seq: 2, Phase: kx.PhaseUp})
	r.End(2, nil)
	r.End(1, nil)
	if !r.idle() {
		t.Fatalf("all ended: planActive %d", r.planActive)
	}
	if up := r.Snapshot().Plans[0].Seconds.ReduceUp; up <= 0 {
		t.Fatalf("the reduce's up phase was not timed: %v", up)
	}
	for seq := uint64(10); seq < 10+70; seq++ { // never ended: the oldest are closed
		r.Begin(seq, kx.Fingerprint{Kind: kx.KindConfig, Plan: 2})
	}
	if r.planActive != 64 {
		t.Fatalf("70 begun, 64 kept: planActive %d", r.planActive)
	}
}

// Reset zeroes every counter and timer; configured plans keep their static records, freed ones
// are dropped.
func TestRecorderReset(t *testing.T) {
	r, m := NewRecorder(), newModel()
	var seq uint64
	play(r, m, rand.New(rand.NewPCG(7, 7)), &seq, 4, 100)
	for id := uint32(1); id <= 4; id++ {
		if _, ok := m.plans[id]; ok {
			r.NotePlan(id, PlanStats{Degrees: []int{int(id), 2}, NOut: 10 * int(id)}, func() bool { return true })
		}
	}
	r.NoteFreed(m.order[0])
	before := r.Snapshot().SinceUnix
	r.Reset()
	st := r.Snapshot()
	if st.SinceUnix < before {
		t.Fatalf("since_unix_s went back: %v < %v", st.SinceUnix, before)
	}
	keep := newModel() // every counter zero; the kept plans' records
	for _, id := range m.order[1:] {
		keep.plan(id, kx.KindInvalid).createdBy = m.plans[id].createdBy
	}
	keep.compare(t, st)
	if st.Retired.Plans != 0 || st.Retired.Calls != (PlanCalls{}) || len(st.Retired.Layers) != 0 {
		t.Fatalf("retired_plans after reset: %+v", st.Retired)
	}
	for _, p := range st.Plans {
		if len(p.Degrees) != 2 || p.Degrees[0] != int(p.ID) || p.NOut != 10*int(p.ID) || !p.Configured {
			t.Fatalf("plan %d lost its static record in the reset: %+v", p.ID, p)
		}
		for _, l := range p.Layers {
			if l.LayerTraffic != (LayerTraffic{}) {
				t.Fatalf("plan %d layer %d kept traffic after the reset: %+v", p.ID, l.Layer, l.LayerTraffic)
			}
		}
	}
	// Counting goes on from zero.
	play(r, keep, rand.New(rand.NewPCG(8, 8)), &seq, 4, 50)
	keep.compare(t, r.Snapshot())
}

// reduceOn runs one reduce of plan id with one message down layer 0 of n bytes.
func reduceOn(r *Recorder, seq *uint64, id uint32, n int) {
	*seq++
	r.Begin(*seq, kx.Fingerprint{Kind: kx.KindReduce, Plan: id})
	r.Count(kx.Tag{Seq: *seq, Phase: kx.PhaseDown}, n, true)
	r.End(*seq, nil)
}

// Beyond maxPlanRecords plans, the oldest that nobody can use any more fold into
// retired_plans; the sums over plans and retired_plans stay the totals.
func TestRecorderRetiresOldPlans(t *testing.T) {
	r := NewRecorder()
	var seq uint64
	const plans = maxPlanRecords + 10
	for id := uint32(1); id <= plans; id++ {
		reduceOn(r, &seq, id, int(id))
		if id%2 == 0 { // even plans stay usable; odd ones were dropped by the caller
			r.NotePlan(id, PlanStats{}, func() bool { return true })
		} else {
			r.NotePlan(id, PlanStats{}, func() bool { return false })
		}
	}
	st := r.Snapshot()
	// The records past the bound are the oldest dropped plans: 1, 3, ..., 19.
	if len(st.Plans) != maxPlanRecords || st.Retired.Plans != plans-maxPlanRecords {
		t.Fatalf("%d plan records and %d retired, want %d and %d", len(st.Plans), st.Retired.Plans, maxPlanRecords, plans-maxPlanRecords)
	}
	var retiredBytes, keptBytes uint64
	for id := uint32(1); id <= 2*(plans-maxPlanRecords); id += 2 {
		retiredBytes += uint64(id)
	}
	for _, p := range st.Plans {
		if p.ID%2 == 1 && p.ID <= 2*(plans-maxPlanRecords) {
			t.Fatalf("plan %d should have been retired", p.ID)
		}
		keptBytes += p.Layers[0].ReduceDown.BytesSent
	}
	if st.Retired.Calls.Reduce != plans-maxPlanRecords || len(st.Retired.Layers) != 1 || st.Retired.Layers[0].ReduceDown.BytesSent != retiredBytes {
		t.Fatalf("retired_plans %+v, want %d reduces and %d bytes down layer 0", st.Retired, plans-maxPlanRecords, retiredBytes)
	}
	if keptBytes+retiredBytes != plans*(plans+1)/2 || st.Totals.BytesSent != plans*(plans+1)/2 {
		t.Fatalf("kept %d + retired %d bytes, totals %d, want %d", keptBytes, retiredBytes, st.Totals.BytesSent, plans*(plans+1)/2)
	}
	// A freed plan is retired too once the records are over the bound.
	r.NoteFreed(2)
	reduceOn(r, &seq, plans+1, 1)
	st = r.Snapshot()
	for _, p := range st.Plans {
		if p.ID == 2 {
			t.Fatalf("freed plan 2 kept its record past the bound")
		}
	}
}

// A plan configured while every record is of a plan still in use keeps its record: its own
// traffic must not vanish into the aggregate before its configuration is recorded.
func TestRecorderNewPlanOverTheBound(t *testing.T) {
	r := NewRecorder()
	var seq uint64
	for id := uint32(1); id <= maxPlanRecords; id++ {
		reduceOn(r, &seq, id, 1)
		r.NotePlan(id, PlanStats{}, func() bool { return true })
	}
	seq++
	r.Begin(seq, kx.Fingerprint{Kind: kx.KindConfig, Plan: maxPlanRecords + 1})
	r.Count(kx.Tag{Seq: seq, Phase: kx.PhaseConfig}, 100, true)
	r.End(seq, nil)
	r.NotePlan(maxPlanRecords+1, PlanStats{Degrees: []int{2}}, func() bool { return true })
	st := r.Snapshot()
	last := st.Plans[len(st.Plans)-1]
	if last.ID != maxPlanRecords+1 || !last.Configured || last.Calls.Config != 1 {
		t.Fatalf("the newest plan's record: %+v (retired %+v)", last, st.Retired)
	}
}

// The JSON keys kylix_stats_json documents (include/kylix.h), present with the documented
// shapes; new fields may be added.
func TestSnapshotJSONShape(t *testing.T) {
	r := NewRecorder()
	var seq uint64
	reduceOn(r, &seq, 1, 8)
	b, err := json.Marshal(r.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	has := func(where string, obj any, keys ...string) {
		t.Helper()
		m, ok := obj.(map[string]any)
		if !ok {
			t.Fatalf("%s is %T, not an object", where, obj)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s lacks %q: %s", where, k, b)
			}
		}
	}
	isArray := func(where string, v any) []any {
		t.Helper()
		a, ok := v.([]any)
		if !ok {
			t.Fatalf("%s is %T, not an array: %s", where, v, b)
		}
		return a
	}
	traffic := []string{"bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv"}
	has("stats", doc, "version", "rank", "size", "degrees_option", "degrees", "threads", "kernels", "options",
		"since_unix_s", "compression", "links", "totals", "phase_seconds", "collectives", "plans",
		"replication", "shm", "retired_plans")
	if doc["version"] != float64(1) {
		t.Fatalf("version %v, want 1", doc["version"])
	}
	has("options", doc["options"], "timeout_ms", "liveness_ms", "threads", "log", "min_packet", "replication", "compress", "shm", "degrees")
	has("compression", doc["compression"], "option", "active", "raw_sent", "wire_sent", "raw_recv", "wire_recv", "ratio", "note")
	has("totals", doc["totals"], traffic...)
	has("phase_seconds", doc["phase_seconds"], "config", "reduce_down", "reduce_up", "config_reduce_down", "config_reduce_up", "dense")
	for _, k := range []string{"config", "reduce", "config_reduce", "allreduce", "bcast", "barrier", "mix", "agree", "invalid-arguments"} {
		c := doc["collectives"].(map[string]any)[k]
		has("collectives."+k, c, "calls", "errors", "seconds", "traffic")
		has("collectives."+k+".traffic", c.(map[string]any)["traffic"], traffic...)
	}
	plans := isArray("plans", doc["plans"])
	if len(plans) != 1 {
		t.Fatalf("%d plans, want 1", len(plans))
	}
	has("plan", plans[0], "id", "created_by", "configured", "freed", "degrees", "n_out", "n_in", "out_keys", "in_keys",
		"bottom_out_keys", "bottom_in_keys", "calls", "seconds", "agree", "links", "layers")
	p := plans[0].(map[string]any)
	isArray("plan.degrees", p["degrees"])
	has("plan.calls", p["calls"], "config", "reduce", "config_reduce", "errors")
	has("plan.seconds", p["seconds"], "config", "reduce_down", "reduce_up", "config_reduce_down", "config_reduce_up")
	layers := isArray("plan.layers", p["layers"])
	has("layer", layers[0], "layer", "degree", "out_keys_above", "in_keys_above", "out_keys_sent", "in_keys_sent",
		"out_keys_recv", "in_keys_recv", "out_keys_below", "in_keys_below", "config", "reduce_down", "reduce_up",
		"config_reduce_down", "config_reduce_up", "index_bytes")
	has("layer.reduce_down", layers[0].(map[string]any)["reduce_down"], traffic...)
	has("retired_plans", doc["retired_plans"], "plans", "calls", "seconds", "agree", "layers")
	isArray("retired_plans.layers", doc["retired_plans"].(map[string]any)["layers"])
	has("replication", doc["replication"], "replicas", "nodes", "node", "failed_ranks", "copies_won", "copies_lost", "duplicate_bytes", "peers")
}

// A reset while a collective runs drops what it counted before the reset, on its own goroutine
// (own.go) as under the lock, and its time runs from the reset.
func TestRecorderResetMidCollective(t *testing.T) {
	for _, timeline := range []bool{false, true} {
		r, m := NewRecorder(), newModel()
		if timeline {
			r.SetTracer(newTestTracer(t))
		}
		r.Begin(1, kx.Fingerprint{Kind: kx.KindReduce, Plan: 3})
		down := kx.Tag{Seq: 1, Phase: kx.PhaseDown}
		up := kx.Tag{Seq: 1, Layer: 1, Phase: kx.PhaseUp}
		r.Enter(down)
		r.Count(down, 100, true)
		r.Count(kx.Tag{Seq: 1, Phase: kx.PhaseSmall}, 8, false)
		time.Sleep(20 * time.Millisecond) // down's time before the reset, which it drops
		r.Reset()
		r.Enter(up)
		r.Count(up, 40, false)
		r.CountAside(up, 7)
		r.End(1, nil)
		m.plan(3, kx.KindReduce)
		m.count(kx.KindReduce, 3, up, 40, false)
		m.count(kx.KindReduce, 3, up, 7, true)
		m.end(kx.KindReduce, 3, false)
		st := r.Snapshot()
		m.compare(t, st)
		if s := st.Plans[0].Seconds; s.ReduceDown >= 0.01 || s.ReduceUp <= 0 {
			t.Fatalf("timeline %v: phase seconds after a reset mid-call: %+v (down ran 20 ms before it)", timeline, s)
		}
	}
}

// Sends beside the running collective count under the lock while its own goroutine counts
// without it (run with -race).
func TestRecorderAsideWithOwn(t *testing.T) {
	for _, timeline := range []bool{false, true} {
		asideWithOwn(t, timeline)
	}
}

func asideWithOwn(t *testing.T, timeline bool) {
	r, m := NewRecorder(), newModel()
	if timeline {
		r.SetTracer(newTestTracer(t))
	}
	const asides, own = 4, 2000
	for seq := uint64(1); seq <= 20; seq++ {
		r.Begin(seq, kx.Fingerprint{Kind: kx.KindReduce, Plan: 1})
		m.plan(1, kx.KindReduce)
		done := make(chan struct{})
		for g := range asides {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range own / 10 {
					tag := kx.Tag{Seq: seq, Layer: uint8(g % 3), Phase: kx.PhaseDown}
					t0 := r.EnterAside([][]byte{make([]byte, 70<<10)})
					r.CountAside(tag, i+1)
					r.Message(tag, 1, i+1, true, t0, nil)
				}
			}()
		}
		for i := range own {
			tag := kx.Tag{Seq: seq, Layer: uint8(i % 5), Phase: []kx.Phase{kx.PhaseDown, kx.PhaseUp}[i%2]}
			if i%100 == 0 {
				r.Step(seq, trace.StepCombine, i%5)
			}
			t0 := r.EnterWait(tag, 0, -1)
			r.Count(tag, i, false)
			r.Message(tag, 0, i, false, t0, nil)
			m.count(kx.KindReduce, 1, tag, i, false)
		}
		for g := range asides {
			<-done
			for i := range own / 10 {
				m.count(kx.KindReduce, 1, kx.Tag{Seq: seq, Layer: uint8(g % 3), Phase: kx.PhaseDown}, i+1, true)
			}
		}
		r.End(seq, nil)
		m.end(kx.KindReduce, 1, false)
	}
	m.compare(t, r.Snapshot())
}

// newTestTracer is a timeline in a test's directory, closed when the test ends.
func newTestTracer(t *testing.T) *trace.Tracer {
	tl, err := trace.Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl
}
