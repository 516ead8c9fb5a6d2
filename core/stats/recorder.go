package stats

import (
	"kylix/core/kx"
	"kylix/core/trace"
	"sync"
	"sync/atomic"
	"time"
)

// Statistics of a comm (kylix_stats_json). A comm's Recorder is told of every begin, send and
// receive by the comm's data path (wire.go): begin's fingerprint names the kind of collective and
// its plan, and every message's tag names the collective (seq), the layer and the phase, so each
// message is charged to (kind, plan, layer, phase) without core's algorithms knowing. Three
// hooks add what the wire does not show: Comm.collective reports the end of a collective (for
// the time spent in it), Plan.configure hands over the finished plan (its degrees and per-layer
// key counts, from Plan.layers), and Plan.Free marks the plan freed.
//
// Bytes are message payload bytes as the transport carries them (frame headers excluded): the
// same figures as netio's PeerStats. Times are wall-clock seconds measured on this rank. All
// counters are cumulative since NewComm or the last ResetStats.
//
// Memory stays bounded however many plans a comm configures (a mini-batch loop makes one per
// step): the records of at most maxPlanRecords plans are kept; beyond that the oldest plans
// that were freed, or dropped by the caller (config_reduce without keeping the plan) and
// garbage collected, are folded into one "retired_plans" aggregate.

const (
	statsVersion   = 1
	maxPlanRecords = 64
)

// Message slots of a plan: which collective moved the message and in which direction.
const (
	slotConfig     = iota // config: index sets going down
	slotReduceDown        // reduce: values going down (scatter-reduce)
	slotReduceUp          // reduce: values coming back up (allgather)
	slotCRDown            // config_reduce: indices and values going down
	slotCRUp              // config_reduce: values coming back up
	numSlots
)

// slotOf is the slot of a message of phase ph in a collective of kind k, or -1 when k is not a
// plan's collective.
func slotOf(k kx.Kind, ph kx.Phase) int {
	switch k {
	case kx.KindConfig:
		return slotConfig
	case kx.KindReduce:
		if ph == kx.PhaseUp {
			return slotReduceUp
		}
		return slotReduceDown
	case kx.KindConfigReduce:
		if ph == kx.PhaseUp {
			return slotCRUp
		}
		return slotCRDown
	}
	return -1
}

func planSeconds(s *[numSlots]time.Duration) PlanSeconds {
	return PlanSeconds{Config: s[slotConfig].Seconds(), ReduceDown: s[slotReduceDown].Seconds(),
		ReduceUp: s[slotReduceUp].Seconds(), ConfigReduceDown: s[slotCRDown].Seconds(),
		ConfigReduceUp: s[slotCRUp].Seconds()}
}

func layerTraffic(s *[numSlots]Traffic) LayerTraffic {
	return LayerTraffic{Config: s[slotConfig], ReduceDown: s[slotReduceDown], ReduceUp: s[slotReduceUp],
		ConfigReduceDown: s[slotCRDown], ConfigReduceUp: s[slotCRUp]}
}

// ---- the recorder ---------------------------------------------------------------------------

type planRec struct {
	id         uint32
	createdBy  kx.Kind
	alive      func() bool // nil until configured
	configured bool
	freed      bool
	static     PlanStats // Degrees, counts and the key figures of Layers
	calls      PlanCalls
	secs       [numSlots]time.Duration
	agree      Traffic
	links      Traffic
	layers     [][numSlots]Traffic
	index      []IndexBytes // per layer
}

// retirable: nobody can use the plan any more (it was freed or collected, or its
// configuration failed: a record that never got a plan has a nil weak pointer).
func (r *planRec) retirable() bool {
	return r.freed || r.alive == nil || !r.alive()
}

type kindRec struct {
	calls, errors uint64
	secs          time.Duration
	tr            Traffic
}

type activeColl struct {
	seq       uint64
	kind      kx.Kind
	plan      *planRec // nil unless config, reduce or config_reduce
	start     int64    // kx.FastMono
	slot      int
	slotStart int64
	tl        tlColl // the timeline's view of it (timeline.go); zero when off
	// own and ownTl are what the collective's own goroutine counted without the lock (own.go);
	// End folds them into the shared records and the timeline's.
	own   ownCounts
	ownTl ownTimeline
}

// Recorder keeps the statistics of one comm: the comm's data path (core/wire.go) tells it when a
// collective begins and ends and what each message carried.
type Recorder struct {
	mu      sync.Mutex
	since   time.Time
	kinds   [kx.NumKinds]kindRec
	orphan  Traffic // messages of no known collective (not expected)
	plans   map[uint32]*planRec
	order   []*planRec // plans in creation order
	retired planRec    // aggregate of dropped records (calls, secs, agree, layers)
	nRetir  int
	// active are the collectives begun and not ended, in the order they began: one or two at
	// a time, so a slice searched from its end costs less a call than a map (whose deletes
	// of its last entry also reseed it from the random source).
	active []*activeColl
	// freeActive are records of ended collectives, for reuse.
	freeActive []*activeColl
	index      IndexBytes    // every config message's, for CompressionStats
	packed     bool          // some message travelled compressed
	tl         *trace.Tracer // the timeline (option timeline), nil when off
	// cur is the running collective: its own goroutine's hooks count into cur.own without the
	// lock (own.go), and its timeline phases go to cur.tl (Step). Written by Begin and End, read
	// by the hooks, all on the goroutine that runs the collective.
	cur *activeColl
	// resets counts Reset's calls, resetMono is the last one's moment: a collective that ran
	// across a reset drops what it counted before it when it ends (own.go).
	resets    uint64
	resetMono int64
	tlBytes   [trace.MaxCounterLayers]int64
	tlLayers  int
	// gen counts the events that change the figures: a collective's end, a plan freed, a
	// reset. The comm holds the transport's background figures from one to the next.
	gen uint64
	// planActive counts the active collectives with a plan record (config, reduce,
	// config_reduce): the only ones whose messages switch phase slots. While there are none
	// and the timeline is off, Enter has nothing to do and takes no lock (a dense allreduce's
	// two messages). Written under mu with kx.StoreRelaxed, read with an atomic load.
	planActive int64
}

// NewRecorder starts counting.
func NewRecorder() *Recorder {
	return &Recorder{since: time.Now(), plans: map[uint32]*planRec{}}
}

// Begin opens collective seq.
func (s *Recorder) Begin(seq uint64, fp kx.Fingerprint) {
	now := kx.FastMono()
	s.mu.Lock()
	a := s.newActive()
	// Field by field: the timeline's part is large, and zeroing it every call when the
	// timeline is off would cost more than the rest of the record.
	a.seq, a.kind, a.plan, a.start, a.slot, a.slotStart = seq, fp.Kind, nil, now, -1, now
	if int(fp.Kind) >= len(s.kinds) {
		a.kind = kx.KindInvalid
	}
	if sl := slotOf(fp.Kind, 0); sl >= 0 {
		a.slot = sl
		a.plan = s.planRecord(fp.Plan, fp.Kind)
	}
	a.own.begin(atomic.LoadUint64(&s.resets))
	a.ownTl.begin()
	if s.tl != nil {
		a.tl.begin(fp, s.tl.AtMono(now))
	}
	s.cur = a
	if len(s.active) >= 64 { // collectives whose end was never reported: close the oldest
		old := ^uint64(0)
		for _, o := range s.active {
			old = min(old, o.seq)
		}
		s.endLocked(old, nil, now)
	}
	if a.plan != nil {
		s.addPlanActive(1)
	}
	if i := s.activeAt(seq); i >= 0 { // begun again: the new record replaces the old one
		if s.active[i].plan != nil {
			s.addPlanActive(-1)
		}
		s.active[i] = a
	} else {
		s.active = append(s.active, a)
	}
	s.mu.Unlock()
}

// addPlanActive changes planActive by d; under mu.
func (s *Recorder) addPlanActive(d int64) { kx.StoreRelaxed(&s.planActive, s.planActive+d) }

// idle: no active collective has phase slots and the timeline is off, so entering a phase
// does nothing (Enter, EnterSend, EnterWait). A collective's own hooks run after its Begin, on
// its goroutine, so they never miss their own plan record.
func (s *Recorder) idle() bool { return s.tl == nil && atomic.LoadInt64(&s.planActive) == 0 }

// Enter switches the collective of tag to the slot of tag's phase, charging the time since the
// last switch to the slot it leaves. It returns the timeline's clock for Message (0 when off).
func (s *Recorder) Enter(tag kx.Tag) int64 {
	if a := s.owned(tag.Seq); a != nil {
		s.enterOwn(a, tag)
		if s.tl != nil {
			return s.tl.Now()
		}
		return 0
	}
	if s.idle() {
		return 0
	}
	s.mu.Lock()
	s.enterLocked(s.find(tag.Seq), tag)
	s.mu.Unlock()
	if s.tl != nil {
		return s.tl.Now()
	}
	return 0
}

func (s *Recorder) enterLocked(a *activeColl, tag kx.Tag) {
	if a != nil && a.plan != nil && tag.Phase != kx.PhaseSmall {
		if sl := slotOf(a.kind, tag.Phase); sl != a.slot {
			now := kx.FastMono()
			s.caughtUp(a)
			a.plan.secs[a.slot] += time.Duration(now - a.slotStart)
			a.slot, a.slotStart = sl, now
		}
	}
}

// Count charges a message of n payload bytes, sent or received, to its collective, plan, layer
// and phase.
func (s *Recorder) Count(tag kx.Tag, n int, sent bool) {
	u := Traffic{BytesRecv: uint64(n), MsgsRecv: 1}
	if sent {
		u = Traffic{BytesSent: uint64(n), MsgsSent: 1}
	}
	if a := s.owned(tag.Seq); a != nil && s.countOwn(a, tag, u) {
		return
	}
	s.mu.Lock()
	s.countLocked(tag, n, u)
	s.mu.Unlock()
}

// countLocked is Count's body (without a deferred unlock: Count runs for every message).
func (s *Recorder) countLocked(tag kx.Tag, n int, u Traffic) {
	sent := u.MsgsSent > 0
	a := s.find(tag.Seq)
	if a == nil {
		s.orphan.Add(u)
		return
	}
	s.kinds[a.kind].tr.Add(u)
	if s.tl != nil {
		s.tlCount(a, tag, n, sent)
	}
	if a.plan == nil {
		return
	}
	switch tag.Phase {
	case kx.PhaseSmall:
		a.plan.agree.Add(u)
		return
	case kx.PhaseLinks:
		a.plan.links.Add(u)
		return
	}
	if sl := slotOf(a.kind, tag.Phase); sl >= 0 {
		for int(tag.Layer) >= len(a.plan.layers) {
			a.plan.layers = append(a.plan.layers, [numSlots]Traffic{})
		}
		a.plan.layers[tag.Layer][sl].Add(u)
	}
}

// End closes collective seq: its time and outcome.
func (s *Recorder) End(seq uint64, err error) {
	s.mu.Lock()
	s.endLocked(seq, err, kx.FastMono())
	s.mu.Unlock()
}

// AddCalls counts calls collectives of kind k that ran outside the recorder's hooks (the C
// ABI's express allreduce, core/express.go), their time and traffic.
func (s *Recorder) AddCalls(k kx.Kind, calls uint64, d time.Duration, t Traffic) {
	if calls == 0 && t == (Traffic{}) {
		return
	}
	s.mu.Lock()
	r := &s.kinds[k]
	r.calls += calls
	r.secs += d
	r.tr.Add(t)
	s.gen++
	s.mu.Unlock()
}

// newActive is a record for a collective, reused from one that ended (a small collective
// allocates nothing here).
func (s *Recorder) newActive() *activeColl {
	if n := len(s.freeActive); n > 0 {
		a := s.freeActive[n-1]
		s.freeActive = s.freeActive[:n-1]
		return a
	}
	return new(activeColl)
}

// activeAt is where active collective seq's record is in s.active, or -1; the latest first.
func (s *Recorder) activeAt(seq uint64) int {
	for i := len(s.active) - 1; i >= 0; i-- {
		if s.active[i].seq == seq {
			return i
		}
	}
	return -1
}

// find is the record of active collective seq, or nil.
func (s *Recorder) find(seq uint64) *activeColl {
	if i := s.activeAt(seq); i >= 0 {
		return s.active[i]
	}
	return nil
}

// release keeps the record of an ended collective for reuse (Begin sets every field it reads).
func (s *Recorder) release(a *activeColl) {
	a.plan = nil
	if len(s.freeActive) < 4 {
		s.freeActive = append(s.freeActive, a)
	}
}

func (s *Recorder) endLocked(seq uint64, err error, now int64) {
	i := s.activeAt(seq)
	if i < 0 {
		return
	}
	a := s.active[i]
	last := len(s.active) - 1
	copy(s.active[i:], s.active[i+1:])
	s.active[last] = nil
	s.active = s.active[:last]
	if s.cur == a {
		s.cur = nil
	}
	s.foldOwn(a)
	s.gen++
	if s.tl != nil {
		s.tlEnd(seq, a, err, now)
	}
	if a.plan != nil {
		s.addPlanActive(-1)
	}
	k := &s.kinds[a.kind]
	k.calls++
	k.secs += time.Duration(now - a.start)
	if err != nil {
		k.errors++
	}
	if p := a.plan; p != nil {
		p.secs[a.slot] += time.Duration(now - a.slotStart)
		switch a.kind {
		case kx.KindConfig:
			p.calls.Config++
		case kx.KindReduce:
			p.calls.Reduce++
		case kx.KindConfigReduce:
			p.calls.ConfigReduce++
		}
		if err != nil {
			p.calls.Errors++
		}
	}
	s.release(a) // not deferred: End runs for every collective, and nothing above panics
}

// planRecord finds or makes the record of plan id; a new record may push old ones out.
func (s *Recorder) planRecord(id uint32, k kx.Kind) *planRec {
	if r := s.plans[id]; r != nil {
		return r
	}
	r := &planRec{id: id, createdBy: k}
	s.plans[id] = r
	if len(s.order) >= maxPlanRecords {
		s.retire(false) // before r joins: the plan being configured has no weak pointer yet
	}
	s.order = append(s.order, r)
	return r
}

// retire folds the records of plans nobody can use any more into the aggregate: the oldest
// first until there is room for one more record within maxPlanRecords, or all of them when all
// is set (reset).
func (s *Recorder) retire(all bool) {
	busy := map[*planRec]bool{}
	for _, a := range s.active {
		if a.plan != nil {
			busy[a.plan] = true
		}
	}
	kept := s.order[:0]
	n := len(s.order)
	for _, r := range s.order {
		if (all || n >= maxPlanRecords) && !busy[r] && r.retirable() {
			s.fold(r)
			delete(s.plans, r.id)
			n--
			continue
		}
		kept = append(kept, r)
	}
	clear(s.order[len(kept):])
	s.order = kept
}

func (s *Recorder) fold(r *planRec) {
	g := &s.retired
	s.nRetir++
	g.calls.Config += r.calls.Config
	g.calls.Reduce += r.calls.Reduce
	g.calls.ConfigReduce += r.calls.ConfigReduce
	g.calls.Errors += r.calls.Errors
	for i := range g.secs {
		g.secs[i] += r.secs[i]
	}
	g.agree.Add(r.agree)
	for len(g.layers) < len(r.layers) {
		g.layers = append(g.layers, [numSlots]Traffic{})
	}
	for i := range r.layers {
		for sl := range r.layers[i] {
			g.layers[i][sl].Add(r.layers[i][sl])
		}
	}
}

// NoteIndex adds a config message's index bytes to its plan's layer and to the totals.
func (s *Recorder) NoteIndex(tag kx.Tag, raw, wire int, sent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index.Add(raw, wire, sent)
	s.packed = s.packed || wire != raw
	a := s.find(tag.Seq)
	if a == nil || a.plan == nil {
		return
	}
	for int(tag.Layer) >= len(a.plan.index) {
		a.plan.index = append(a.plan.index, IndexBytes{})
	}
	a.plan.index[tag.Layer].Add(raw, wire, sent)
}

// NotePlan records plan id's degrees and per-layer key counts (static) once it is configured;
// alive reports whether the caller can still use the plan (its record is retired when not).
func (s *Recorder) NotePlan(id uint32, static PlanStats, alive func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.plans[id]
	if r == nil { // pushed out while configuring: cannot happen (busy records stay), but be safe
		return
	}
	r.static, r.configured, r.alive = static, true, alive
}

// NoteFreed marks plan id freed (kylix_plan_free).
func (s *Recorder) NoteFreed(id uint32) {
	s.mu.Lock()
	if r := s.plans[id]; r != nil {
		r.freed = true
	}
	s.gen++
	s.mu.Unlock()
}

// Reset zeroes every counter and timer; configured plans keep their static records.
func (s *Recorder) Reset() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retire(true)
	s.gen++
	s.since = now
	s.kinds = [kx.NumKinds]kindRec{}
	s.orphan = Traffic{}
	s.retired, s.nRetir = planRec{}, 0
	s.index, s.packed = IndexBytes{}, false
	for _, r := range s.order {
		r.calls, r.secs, r.agree, r.layers = PlanCalls{}, [numSlots]time.Duration{}, Traffic{}, nil
		r.links, r.index = Traffic{}, nil
	}
	atomic.StoreInt64(&s.resetMono, kx.FastMono()) // before the count the hooks look at
	atomic.AddUint64(&s.resets, 1)
}

// Snapshot returns the figures so far; the comm adds what only it knows (options, links).
func (s *Recorder) Snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Version: statsVersion, Generation: s.gen, SinceUnix: float64(s.since.UnixNano()) / 1e9,
		Collectives: map[string]KindStats{}, Plans: make([]PlanStats, 0, len(s.order))}
	st.Totals = s.orphan
	for k := range s.kinds {
		r := &s.kinds[k]
		st.Collectives[kx.Kind(k).String()] = KindStats{Calls: r.calls, Errors: r.errors, Seconds: r.secs.Seconds(), Traffic: r.tr}
		st.Totals.Add(r.tr)
	}
	var secs [numSlots]time.Duration
	for _, r := range s.order {
		ps := r.static
		ps.ID, ps.CreatedBy, ps.Configured, ps.Freed = r.id, r.createdBy.String(), r.configured, r.freed
		ps.Calls, ps.Seconds, ps.Agree, ps.Links = r.calls, planSeconds(&r.secs), r.agree, r.links
		ps.Layers = append([]LayerStats(nil), ps.Layers...)
		for i := range r.layers {
			if i >= len(ps.Layers) {
				ps.Layers = append(ps.Layers, LayerStats{Layer: i})
			}
			ps.Layers[i].LayerTraffic = layerTraffic(&r.layers[i])
		}
		for i := range ps.Layers {
			if i < len(r.index) {
				ps.Layers[i].Index = r.index[i]
			}
			ps.Layers[i].Index = ps.Layers[i].Index.WithRatio()
		}
		if ps.Degrees == nil {
			ps.Degrees = []int{}
		}
		for i := range secs {
			secs[i] += r.secs[i]
		}
		st.Plans = append(st.Plans, ps)
	}
	g := &s.retired
	st.Retired = RetiredStats{Plans: s.nRetir, Calls: g.calls, Seconds: planSeconds(&g.secs), Agree: g.agree,
		Layers: make([]LayerTraffic, len(g.layers))}
	for i := range g.layers {
		st.Retired.Layers[i] = layerTraffic(&g.layers[i])
	}
	for i := range secs {
		secs[i] += g.secs[i]
	}
	st.PhaseSeconds = PhaseSeconds{PlanSeconds: planSeconds(&secs), Dense: s.kinds[kx.KindAllreduce].secs.Seconds()}
	st.Compression = CompressionStats{Active: s.packed, IndexBytes: s.index.WithRatio()}
	return st
}
