package core

import (
	"encoding/json"
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
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

// Traffic counts data messages: payload bytes and messages, each way.
type Traffic struct {
	BytesSent uint64 `json:"bytes_sent"`
	BytesRecv uint64 `json:"bytes_recv"`
	MsgsSent  uint64 `json:"msgs_sent"`
	MsgsRecv  uint64 `json:"msgs_recv"`
}

// Add accumulates u into t.
func (t *Traffic) Add(u Traffic) {
	t.BytesSent += u.BytesSent
	t.BytesRecv += u.BytesRecv
	t.MsgsSent += u.MsgsSent
	t.MsgsRecv += u.MsgsRecv
}

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

// PlanSeconds is the time a plan's collectives spent in each phase, in seconds. Config's time
// includes the degrees=auto agreement and the final merge; a reduce's down phase runs from its
// start to its first message going up, the up phase from there to its end.
type PlanSeconds struct {
	Config           float64 `json:"config"`
	ReduceDown       float64 `json:"reduce_down"`
	ReduceUp         float64 `json:"reduce_up"`
	ConfigReduceDown float64 `json:"config_reduce_down"`
	ConfigReduceUp   float64 `json:"config_reduce_up"`
}

func planSeconds(s *[numSlots]time.Duration) PlanSeconds {
	return PlanSeconds{s[slotConfig].Seconds(), s[slotReduceDown].Seconds(), s[slotReduceUp].Seconds(),
		s[slotCRDown].Seconds(), s[slotCRUp].Seconds()}
}

// PhaseSeconds is PlanSeconds summed over every plan (live and retired), plus the dense
// allreduce.
type PhaseSeconds struct {
	PlanSeconds
	Dense float64 `json:"dense"`
}

// PlanCalls counts a plan's collectives. Errors counts those that failed on this rank.
type PlanCalls struct {
	Config       uint64 `json:"config"`
	Reduce       uint64 `json:"reduce"`
	ConfigReduce uint64 `json:"config_reduce"`
	Errors       uint64 `json:"errors"`
}

// LayerTraffic is the traffic of one butterfly layer of a plan, by collective and direction.
type LayerTraffic struct {
	Config           Traffic `json:"config"`
	ReduceDown       Traffic `json:"reduce_down"`
	ReduceUp         Traffic `json:"reduce_up"`
	ConfigReduceDown Traffic `json:"config_reduce_down"`
	ConfigReduceUp   Traffic `json:"config_reduce_up"`
}

func layerTraffic(s *[numSlots]Traffic) LayerTraffic {
	return LayerTraffic{s[slotConfig], s[slotReduceDown], s[slotReduceUp], s[slotCRDown], s[slotCRUp]}
}

// IndexBytes are the index-list bytes of a layer's config messages (config and config_reduce)
// before compression (raw: 8 per key) and as they travelled (wire), each way. Ratio is raw/wire
// of what this rank sent (1 when it sent nothing or compressed nothing).
type IndexBytes struct {
	RawSent  uint64  `json:"raw_sent"`
	WireSent uint64  `json:"wire_sent"`
	RawRecv  uint64  `json:"raw_recv"`
	WireRecv uint64  `json:"wire_recv"`
	Ratio    float64 `json:"ratio"`
}

func (x *IndexBytes) add(raw, wire int, sent bool) {
	if sent {
		x.RawSent += uint64(raw)
		x.WireSent += uint64(wire)
	} else {
		x.RawRecv += uint64(raw)
		x.WireRecv += uint64(wire)
	}
}

func (x IndexBytes) withRatio() IndexBytes {
	x.Ratio = 1
	if x.WireSent > 0 {
		x.Ratio = float64(x.RawSent) / float64(x.WireSent)
	}
	return x
}

// LayerStats describes layer Layer of a plan on this rank: the keys (unique indices) this rank
// held above the layer, sent to the other members of its group (the rest it keeps), received
// from them, and held below the layer after merging, and the traffic of the layer.
type LayerStats struct {
	Layer        int `json:"layer"`
	Degree       int `json:"degree"`
	OutKeysAbove int `json:"out_keys_above"`
	InKeysAbove  int `json:"in_keys_above"`
	OutKeysSent  int `json:"out_keys_sent"`
	InKeysSent   int `json:"in_keys_sent"`
	OutKeysRecv  int `json:"out_keys_recv"`
	InKeysRecv   int `json:"in_keys_recv"`
	OutKeysBelow int `json:"out_keys_below"`
	InKeysBelow  int `json:"in_keys_below"`
	LayerTraffic
	Index IndexBytes `json:"index_bytes"`
}

// PlanStats is one plan's record.
type PlanStats struct {
	ID         uint32       `json:"id"`
	CreatedBy  string       `json:"created_by"` // "config" or "config_reduce"
	Configured bool         `json:"configured"` // false: its configuration failed
	Freed      bool         `json:"freed"`
	Degrees    []int        `json:"degrees"`
	NOut       int          `json:"n_out"` // the caller's indices, repeats included
	NIn        int          `json:"n_in"`
	OutKeys    int          `json:"out_keys"` // unique indices on this rank
	InKeys     int          `json:"in_keys"`
	BottomOut  int          `json:"bottom_out_keys"` // keys held below the last layer
	BottomIn   int          `json:"bottom_in_keys"`
	Calls      PlanCalls    `json:"calls"`
	Seconds    PlanSeconds  `json:"seconds"`
	Agree      Traffic      `json:"agree"` // degrees=auto agreement exchange
	Links      Traffic      `json:"links"` // link measurement run by this plan's config
	Layers     []LayerStats `json:"layers"`
}

// RetiredStats aggregates the plans whose records were dropped to bound memory.
type RetiredStats struct {
	Plans   int            `json:"plans"`
	Calls   PlanCalls      `json:"calls"`
	Seconds PlanSeconds    `json:"seconds"`
	Agree   Traffic        `json:"agree"`
	Layers  []LayerTraffic `json:"layers"`
}

// KindStats counts the collectives of one kind.
type KindStats struct {
	Calls   uint64  `json:"calls"`
	Errors  uint64  `json:"errors"`
	Seconds float64 `json:"seconds"`
	Traffic Traffic `json:"traffic"`
}

// CompressionStats sum the index bytes of every config message (IndexBytes) since the last
// reset. Active: some message travelled compressed. Ratio is raw/wire of what this rank sent.
type CompressionStats struct {
	Option string `json:"option"`
	Active bool   `json:"active"`
	IndexBytes
	Note string `json:"note"`
}

// Stats is a snapshot of a comm's statistics; StatsJSON is its JSON form.
type Stats struct {
	Version       int                  `json:"version"`
	Rank          int                  `json:"rank"`
	Size          int                  `json:"size"`
	DegreesOption string               `json:"degrees_option"`
	Degrees       []int                `json:"degrees"` // fixed degrees; null for auto
	Threads       int                  `json:"threads"` // worker threads of the data path
	Kernels       string               `json:"kernels"` // SIMD level dispatched: avx512, avx2 or go
	Options       StatsOptions         `json:"options"` // the options in effect
	SinceUnix     float64              `json:"since_unix_s"`
	Compression   CompressionStats     `json:"compression"`
	Links         *planning.Links      `json:"links"` // measured link model; null before
	Totals        Traffic              `json:"totals"`
	PhaseSeconds  PhaseSeconds         `json:"phase_seconds"`
	Collectives   map[string]KindStats `json:"collectives"`
	Plans         []PlanStats          `json:"plans"`
	Retired       RetiredStats         `json:"retired_plans"`
	Replication   ReplicationStats     `json:"replication"` // stats_replicas.go
}

// StatsOptions are the comm's options in effect, as kylix_init parsed them.
type StatsOptions struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	LivenessMS  int64  `json:"liveness_ms"`
	Threads     int    `json:"threads"`
	Log         string `json:"log"`
	MinPacket   int64  `json:"min_packet"`
	Replication int    `json:"replication"`
	Compress    string `json:"compress"`
	Degrees     string `json:"degrees"`
}

// ---- the recorder ---------------------------------------------------------------------------

type planRec struct {
	id         uint32
	createdBy  kx.Kind
	ref        weak.Pointer[Plan]
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
	return r.freed || r.ref.Value() == nil
}

type kindRec struct {
	calls, errors uint64
	secs          time.Duration
	tr            Traffic
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
	orphan  Traffic // messages of no known collective (not expected)
	plans   map[uint32]*planRec
	order   []*planRec // plans in creation order
	retired planRec    // aggregate of dropped records (calls, secs, agree, layers)
	nRetir  int
	active  map[uint64]*activeColl
	index   IndexBytes // every config message's, for CompressionStats
	packed  bool       // some message travelled compressed
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
	u := Traffic{BytesRecv: uint64(n), MsgsRecv: 1}
	if sent {
		u = Traffic{BytesSent: uint64(n), MsgsSent: 1}
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
			a.plan.layers = append(a.plan.layers, [numSlots]Traffic{})
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
		g.layers = append(g.layers, [numSlots]Traffic{})
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
	s.index.add(raw, wire, sent)
	s.packed = s.packed || wire != raw
	a := s.active[tag.Seq]
	if a == nil || a.plan == nil {
		return
	}
	for int(tag.Layer) >= len(a.plan.index) {
		a.plan.index = append(a.plan.index, IndexBytes{})
	}
	a.plan.index[tag.Layer].add(raw, wire, sent)
}

// notePlan records the degrees and per-layer key counts of a freshly configured plan.
func (s *recorder) notePlan(p *Plan, rank int) {
	st := PlanStats{Degrees: p.Degrees(), NOut: p.nOut, NIn: p.nIn, OutKeys: p.out0, InKeys: p.in0,
		BottomOut: p.out0, BottomIn: p.in0, Layers: make([]LayerStats, len(p.layers))}
	for i := range p.layers {
		lm := &p.layers[i]
		d := p.topo.Degrees[i]
		me := p.topo.Digit(rank, i)
		ls := LayerStats{Layer: i, Degree: d, OutKeysAbove: lm.outSplit[d], InKeysAbove: lm.inSplit[d],
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
	s.orphan = Traffic{}
	s.retired, s.nRetir = planRec{}, 0
	s.index, s.packed = IndexBytes{}, false
	for _, r := range s.order {
		r.calls, r.secs, r.agree, r.layers = PlanCalls{}, [numSlots]time.Duration{}, Traffic{}, nil
		r.links, r.index = Traffic{}, nil
	}
	for _, a := range s.active {
		a.start, a.slotStart = now, now
	}
}

func (s *recorder) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Version: statsVersion, SinceUnix: float64(s.since.UnixNano()) / 1e9,
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
			ps.Layers[i].Index = ps.Layers[i].Index.withRatio()
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
	st.Compression = CompressionStats{Active: s.packed, IndexBytes: s.index.withRatio()}
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
func (c *Comm) Stats() Stats {
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
	st.Options = StatsOptions{TimeoutMS: c.opts.Timeout.Milliseconds(), LivenessMS: c.opts.Liveness.Milliseconds(), Threads: c.threads(),
		Log: c.opts.Log, MinPacket: c.opts.MinPacket, Replication: c.opts.Replication,
		Compress: c.opts.Compress, Degrees: st.DegreesOption}
	st.Compression.Option = c.opts.Compress
	st.Compression.Note = compressNote(c.opts.Compress)
	st.Options.MinPacket = c.minPacket()
	st.Links = c.Links()
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
