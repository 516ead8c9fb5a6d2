package core

import (
	"kylix/core/coll"
	"kylix/core/dense"
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/members"
	"kylix/core/mix"
	"kylix/core/stats"
	"sync"
	"sync/atomic"
)

// Comm is one rank's membership in a job: a transport plus the agreed sequence of collectives.
// One goroutine at a time may use a Comm (include/kylix.h); plans of one comm share its sequence.
//
// The comm keeps the lifecycle (sequence numbers, broken state, close, the executor of
// non-blocking calls: collective.go, request.go) and the data path (wire.go). The algorithms
// are types over its context (cx: the data path and this node's place, core/coll): the sparse
// butterfly (Plan, config.go, reduce.go), the dense allreduce (core/dense), mixing (core/mix),
// bcast and barrier (core/coll) and the link probes (core/probe).
type Comm struct {
	v    *members.View   // who is in the comm and where they are (members/view.go)
	rec  *stats.Recorder // what the comm's collectives did (core/stats)
	opts kx.Options
	seq  uint64
	st   state // broken and closed
	lent bool  // the express allreduce is lent out of Go (express.go): the borrower owns seq
	// expressCalls counts the allreduces the borrower ran (kylix_stats_json shm.express_calls)
	expressCalls atomic.Uint64
	// ex queues collectives issued while others are in flight (request.go).
	ex executor

	cx    coll.Ctx // what the algorithms see of the comm (path.go)
	dense dense.Allreduce
	mix   mix.Mix
	plan  planner // the sparse butterfly's degrees, link model and codec estimates (planner.go)
	// layer0 is config's sort scratch (and SortLayer0's hash tables), kept between configs
	// (config_reduce streams) so that each one does not page-fault in fresh arrays.
	layer0 keyset.Layer0Scratch
	// rowKeyBuf is PackLayer0's row → key scratch (out, in), likewise kept: config's layer-0
	// messages carry slices of it, and it is free again once config has returned.
	rowKeyBuf [2][]uint64
	// race: the transport's racing counts at the last ResetStats (stats_replicas.go).
	race raceBase
	held heldFigures // the transport's background figures, held between collectives (stats_held.go)

	// Elastic membership (resize.go): the join client when elastic, and each rank's number in
	// the comm this one was resized from (nil: an original comm).
	grower kx.Grower
	prev   []int
}

// state is whether a comm can still run collectives, read by other goroutines than the
// comm's own (a request's executor, Stats).
type state struct {
	mu     sync.Mutex // guards broken and closed
	broken error      // set by a peer failure or timeout: later calls fail with CodeState
	closed bool
	// unusable is closed || broken != nil, readable without mu (mirror keeps it).
	unusable atomic.Bool
	// resizeAttempts counts the failed resizes of the comm (resize.go).
	resizeAttempts int
}

// NewComm makes the original comm of a connected transport, which it takes over (Close closes
// it). opts.Degrees and opts.MinPacket steer planning, opts.Replication groups the ranks into
// nodes.
func NewComm(t kx.Transport, opts kx.Options) (*Comm, error) {
	v, err := members.New(members.NewProc(t), max(opts.Replication, 1))
	if err != nil {
		return nil, err
	}
	return newComm(v, opts)
}

// newComm makes the comm of view v.
func newComm(v *members.View, opts kx.Options) (*Comm, error) {
	ds, err := kx.ParseDegreesSpec(opts.Degrees, v.Nodes())
	if err != nil {
		return nil, err
	}
	c := &Comm{v: v, rec: stats.NewRecorder(), opts: opts, seq: v.Base()}
	c.cx = coll.Ctx{Path: path{c}, Node: v.Node(), Nodes: v.Nodes(), Replication: v.Replication(),
		Threads: max(opts.Threads, 1)}
	if v.HasLanes() {
		v.ClaimLanes() // unclaimed, LaneMax is 0 to every node
		c.cx.Lanes = lanePath{c}
	}
	c.dense = dense.New(&c.cx, ds)
	c.mix = mix.New(&c.cx, ds)
	c.plan = planner{cx: &c.cx, rec: c.rec, opts: opts, degrees: ds}
	return c, nil
}

// Rank and Size count processes, replicas included (kylix_rank, kylix_size).
func (c *Comm) Rank() int { return c.v.Rank() }
func (c *Comm) Size() int { return c.v.Size() }

// FailedRanks lists the ranks of this comm that have crashed or finalized, ascending
// (kylix_failed_ranks).
func (c *Comm) FailedRanks() []int { return c.v.FailedRanks() }

// mirror updates unusable after closed or broken changed; the caller holds mu.
func (s *state) mirror() { s.unusable.Store(s.closed || s.broken != nil) }

// usable reports why the comm cannot run a collective, or nil. A usable comm answers without
// the lock (unusable mirrors closed and broken).
func (s *state) usable() error {
	if !s.unusable.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return kx.Errorf(kx.CodeState, "comm was finalized")
	}
	if s.broken != nil {
		return kx.Errorf(kx.CodeState, "comm is broken by an earlier failure: %v", s.broken)
	}
	return nil
}

// breakWith marks the comm broken by err: later calls fail with CodeState.
func (s *state) breakWith(err error) {
	s.mu.Lock()
	s.broken = err
	s.mirror()
	s.mu.Unlock()
}

// Close ends the comm and its transport. Plans of a closed comm fail with CodeState.
// Requests in flight are finished first, in order: each wait in them is bounded by the
// transport's timeout, and a failure breaks the comm so the rest fail at once. When Close
// returns, no collective touches the caller's buffers any more.
func (c *Comm) Close() error {
	c.ex.waitIdle()
	c.tellBroken() // a peer already in the next collective learns why this rank leaves
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.closed {
		return nil
	}
	c.st.closed = true
	c.st.mirror()
	return c.v.Close()
}
