package core

import (
	"encoding/json"
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/stats"
	"sync"
	"time"
	"weak"
)

// Statistics of a comm (kylix_stats_json). The comm's recorder is told of every begin, send and
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

func planSeconds(s *[numSlots]time.Duration) stats.PlanSeconds {
	return stats.PlanSeconds{Config: s[slotConfig].Seconds(), ReduceDown: s[slotReduceDown].Seconds(),
		ReduceUp: s[slotReduceUp].Seconds(), ConfigReduceDown: s[slotCRDown].Seconds(),
		ConfigReduceUp: s[slotCRUp].Seconds()}
}

func layerTraffic(s *[numSlots]stats.Traffic) stats.LayerTraffic {
	return stats.LayerTraffic{Config: s[slotConfig], ReduceDown: s[slotReduceDown], ReduceUp: s[slotReduceUp],
		ConfigReduceDown: s[slotCRDown], ConfigReduceUp: s[slotCRUp]}
}

// ---- the recorder ---------------------------------------------------------------------------

type planRec struct {
	id         uint32
	createdBy  kx.Kind
	ref        weak.Pointer[Plan]
	configured bool
	freed      bool
	static     stats.PlanStats // Degrees, counts and the key figures of Layers
	calls      stats.PlanCalls
	secs       [numSlots]time.Duration
	agree      stats.Traffic
	links      stats.Traffic
	layers     [][numSlots]stats.Traffic
	index      []stats.IndexBytes // per layer
}

// retirable: nobody can use the plan any more (it was freed or collected, or its
// configuration failed: a record that never got a plan has a nil weak pointer).
func (r *planRec) retirable() bool {
	return r.freed || r.ref.Value() == nil
}

type kindRec struct {
	calls, errors uint64
	secs          time.Duration
	tr            stats.Traffic
}

type activeColl struct {
	kind      kx.Kind
	plan      *planRec // nil unless config, reduce or config_reduce
	start     time.Time
	slot      int
	slotStart time.Time
}

// recorder keeps the statistics of one comm: the comm's data path (wire.go) tells it when a
// collective begins and ends and what each message carried.
type recorder struct {
	mu      sync.Mutex
	since   time.Time
	kinds   [kx.NumKinds]kindRec
	orphan  stats.Traffic // messages of no known collective (not expected)
	plans   map[uint32]*planRec
	order   []*planRec // plans in creation order
	retired planRec    // aggregate of dropped records (calls, secs, agree, layers)
	nRetir  int
	active  map[uint64]*activeColl
	index   stats.IndexBytes // every config message's, for CompressionStats
	packed  bool             // some message travelled compressed
}

func newRecorder() *recorder {
	return &recorder{since: time.Now(), plans: map[uint32]*planRec{}, active: map[uint64]*activeColl{}}
}

// begin opens collective seq.
func (s *recorder) begin(seq uint64, fp kx.Fingerprint) {
	now := time.Now()
	s.mu.Lock()
	a := &activeColl{kind: fp.Kind, start: now, slotStart: now, slot: -1}
	if int(fp.Kind) >= len(s.kinds) {
		a.kind = kx.KindInvalid
	}
	if sl := slotOf(fp.Kind, 0); sl >= 0 {
		a.slot = sl
		a.plan = s.planRecord(fp.Plan, fp.Kind)
	}
	if len(s.active) >= 64 { // collectives whose end was never reported: close the oldest
		old := ^uint64(0)
		for q := range s.active {
			old = min(old, q)
		}
		s.endLocked(old, nil, now)
	}
	s.active[seq] = a
	s.mu.Unlock()
}

// enter switches the collective of tag to the slot of tag's phase, charging the time since the
// last switch to the slot it leaves.
func (s *recorder) enter(tag kx.Tag) {
	s.mu.Lock()
	if a := s.active[tag.Seq]; a != nil && a.plan != nil && tag.Phase != kx.PhaseSmall {
		if sl := slotOf(a.kind, tag.Phase); sl != a.slot {
			now := time.Now()
			a.plan.secs[a.slot] += now.Sub(a.slotStart)
			a.slot, a.slotStart = sl, now
		}
	}
	s.mu.Unlock()
}

func (s *recorder) count(tag kx.Tag, n int, sent bool) {
	u := stats.Traffic{BytesRecv: uint64(n), MsgsRecv: 1}
	if sent {
		u = stats.Traffic{BytesSent: uint64(n), MsgsSent: 1}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.active[tag.Seq]
	if a == nil {
		s.orphan.Add(u)
		return
	}
	s.kinds[a.kind].tr.Add(u)
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
			a.plan.layers = append(a.plan.layers, [numSlots]stats.Traffic{})
		}
		a.plan.layers[tag.Layer][sl].Add(u)
	}
}

// end closes collective seq: its time and outcome.
func (s *recorder) end(seq uint64, err error) {
	s.mu.Lock()
	s.endLocked(seq, err, time.Now())
	s.mu.Unlock()
}

func (s *recorder) endLocked(seq uint64, err error, now time.Time) {
	a := s.active[seq]
	if a == nil {
		return
	}
	delete(s.active, seq)
	k := &s.kinds[a.kind]
	k.calls++
	k.secs += now.Sub(a.start)
	if err != nil {
		k.errors++
	}
	if p := a.plan; p != nil {
		p.secs[a.slot] += now.Sub(a.slotStart)
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
}

// planRecord finds or makes the record of plan id; a new record may push old ones out.
func (s *recorder) planRecord(id uint32, k kx.Kind) *planRec {
	if r := s.plans[id]; r != nil {
		return r
	}
	r := &planRec{id: id, createdBy: k}
	s.plans[id] = r
	s.order = append(s.order, r)
	if len(s.order) > maxPlanRecords {
		s.retire(false)
	}
	return r
}

// retire folds the records of plans nobody can use any more into the aggregate: the oldest
// first while there are more than maxPlanRecords, or all of them when all is set (reset).
func (s *recorder) retire(all bool) {
	busy := map[*planRec]bool{}
	for _, a := range s.active {
		if a.plan != nil {
			busy[a.plan] = true
		}
	}
	kept := s.order[:0]
	n := len(s.order)
	for _, r := range s.order {
		if (all || n > maxPlanRecords) && !busy[r] && r.retirable() {
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

func (s *recorder) fold(r *planRec) {
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
		g.layers = append(g.layers, [numSlots]stats.Traffic{})
	}
	for i := range r.layers {
		for sl := range r.layers[i] {
			g.layers[i][sl].Add(r.layers[i][sl])
		}
	}
}

// noteIndex adds a config message's index bytes to its plan's layer and to the totals.
func (s *recorder) noteIndex(tag kx.Tag, raw, wire int, sent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index.Add(raw, wire, sent)
	s.packed = s.packed || wire != raw
	a := s.active[tag.Seq]
	if a == nil || a.plan == nil {
		return
	}
	for int(tag.Layer) >= len(a.plan.index) {
		a.plan.index = append(a.plan.index, stats.IndexBytes{})
	}
	a.plan.index[tag.Layer].Add(raw, wire, sent)
}

// notePlan records the degrees and per-layer key counts of a freshly configured plan.
func (s *recorder) notePlan(p *Plan, rank int) {
	st := stats.PlanStats{Degrees: p.Degrees(), NOut: p.nOut, NIn: p.nIn, OutKeys: p.out0, InKeys: p.in0,
		BottomOut: p.out0, BottomIn: p.in0, Layers: make([]stats.LayerStats, len(p.layers))}
	for i := range p.layers {
		lm := &p.layers[i]
		d := p.topo.Degrees[i]
		me := p.topo.Digit(rank, i)
		ls := stats.LayerStats{Layer: i, Degree: d, OutKeysAbove: lm.outSplit[d], InKeysAbove: lm.inSplit[d],
			OutKeysBelow: lm.outLen, InKeysBelow: lm.inLen}
		ls.OutKeysSent = ls.OutKeysAbove - (lm.outSplit[me+1] - lm.outSplit[me])
		ls.InKeysSent = ls.InKeysAbove - (lm.inSplit[me+1] - lm.inSplit[me])
		for g := 0; g < d; g++ {
			if g != me {
				ls.OutKeysRecv += len(lm.outMaps[g])
				ls.InKeysRecv += len(lm.inMaps[g])
			}
		}
		st.Layers[i] = ls
		st.BottomOut, st.BottomIn = lm.outLen, lm.inLen
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.plans[p.id]
	if r == nil { // pushed out while configuring: cannot happen (busy records stay), but be safe
		return
	}
	r.static, r.configured, r.ref = st, true, weak.Make(p)
}

func (s *recorder) noteFreed(id uint32) {
	s.mu.Lock()
	if r := s.plans[id]; r != nil {
		r.freed = true
	}
	s.mu.Unlock()
}

func (s *recorder) reset() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retire(true)
	s.since = now
	s.kinds = [kx.NumKinds]kindRec{}
	s.orphan = stats.Traffic{}
	s.retired, s.nRetir = planRec{}, 0
	s.index, s.packed = stats.IndexBytes{}, false
	for _, r := range s.order {
		r.calls, r.secs, r.agree, r.layers = stats.PlanCalls{}, [numSlots]time.Duration{}, stats.Traffic{}, nil
		r.links, r.index = stats.Traffic{}, nil
	}
	for _, a := range s.active {
		a.start, a.slotStart = now, now
	}
}

func (s *recorder) snapshot() stats.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := stats.Stats{Version: statsVersion, SinceUnix: float64(s.since.UnixNano()) / 1e9,
		Collectives: map[string]stats.KindStats{}, Plans: make([]stats.PlanStats, 0, len(s.order))}
	st.Totals = s.orphan
	for k := range s.kinds {
		r := &s.kinds[k]
		st.Collectives[kx.Kind(k).String()] = stats.KindStats{Calls: r.calls, Errors: r.errors, Seconds: r.secs.Seconds(), Traffic: r.tr}
		st.Totals.Add(r.tr)
	}
	var secs [numSlots]time.Duration
	for _, r := range s.order {
		ps := r.static
		ps.ID, ps.CreatedBy, ps.Configured, ps.Freed = r.id, r.createdBy.String(), r.configured, r.freed
		ps.Calls, ps.Seconds, ps.Agree, ps.Links = r.calls, planSeconds(&r.secs), r.agree, r.links
		ps.Layers = append([]stats.LayerStats(nil), ps.Layers...)
		for i := range r.layers {
			if i >= len(ps.Layers) {
				ps.Layers = append(ps.Layers, stats.LayerStats{Layer: i})
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
	st.Retired = stats.RetiredStats{Plans: s.nRetir, Calls: g.calls, Seconds: planSeconds(&g.secs), Agree: g.agree,
		Layers: make([]stats.LayerTraffic, len(g.layers))}
	for i := range g.layers {
		st.Retired.Layers[i] = layerTraffic(&g.layers[i])
	}
	for i := range secs {
		secs[i] += g.secs[i]
	}
	st.PhaseSeconds = stats.PhaseSeconds{PlanSeconds: planSeconds(&secs), Dense: s.kinds[kx.KindAllreduce].secs.Seconds()}
	st.Compression = stats.CompressionStats{Active: s.packed, IndexBytes: s.index.WithRatio()}
	return st
}

// ---- the Comm's side ------------------------------------------------------------------------

// statsEnd is called by collective when body returns.
func (c *Comm) statsEnd(seq uint64, err error) { c.rec.end(seq, err) }

// statsPlan is called by configure once p is configured.
func (c *Comm) statsPlan(p *Plan) { c.rec.notePlan(p, c.node()) }

// statsFreed is called by Plan.Free.
func (c *Comm) statsFreed(id uint32) { c.rec.noteFreed(id) }

// Stats returns a snapshot of the comm's statistics, cumulative since NewComm or the last
// ResetStats. Local: no communication. Safe to call while a collective is running.
func (c *Comm) Stats() stats.Stats {
	st := c.rec.snapshot()
	st.Rank, st.Size = c.Rank(), c.Size()
	st.DegreesOption = c.opts.Degrees
	if st.DegreesOption == "" {
		st.DegreesOption = "auto"
	}
	if c.degrees != nil {
		st.Degrees = append([]int{}, c.degrees...)
	}
	st.Threads, st.Kernels = c.threads(), kernels.Level()
	st.Replication = c.replicationStats()
	st.Options = stats.StatsOptions{TimeoutMS: c.opts.Timeout.Milliseconds(), LivenessMS: c.opts.Liveness.Milliseconds(), Threads: c.threads(),
		Log: c.opts.Log, MinPacket: c.opts.MinPacket, Replication: c.opts.Replication,
		Compress: c.opts.Compress, Degrees: st.DegreesOption, Shm: c.opts.Shm}
	if st.Options.Shm == "" {
		st.Options.Shm = "auto"
	}
	st.Compression.Option = c.opts.Compress
	st.Compression.Note = compressNote(c.opts.Compress)
	st.Options.MinPacket = c.minPacket()
	st.Links = c.Links()
	st.Shm = c.v.ShmStats()
	return st
}

// StatsJSON is Stats as a JSON object (field names in include/kylix.h, kylix_stats_json).
func (c *Comm) StatsJSON() ([]byte, error) {
	b, err := json.Marshal(c.Stats())
	if err != nil {
		return nil, kx.Errorf(kx.CodeInternal, "stats: %v", err)
	}
	return b, nil
}

// ResetStats sets every counter and timer to zero and restarts the clock of since_unix_s.
// Configured plans keep their degrees and key counts; records of freed plans are dropped.
func (c *Comm) ResetStats() {
	c.rec.reset()
	c.resetRaceBase()
}
