package core

import (
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/members"
	"kylix/core/stats"
	"sync"
	"sync/atomic"
)

// Comm is one rank's membership in a job: a transport plus the agreed sequence of collectives.
// One goroutine at a time may use a Comm (include/kylix.h); plans of one comm share its sequence.
type Comm struct {
	v       *members.View   // who is in the comm and where they are (members/view.go)
	rec     *stats.Recorder // what the comm's collectives did (core/stats)
	opts    kx.Options
	degrees []int // fixed degrees from the option, nil for auto
	seq     uint64
	fp      kx.Fingerprint // the running collective's (run), carried by its sends
	broken  error          // set by a peer failure or timeout: later calls fail with CodeState
	closed  bool
	// planCache memoises degrees=auto plans; streamDegrees are the degrees config_reduce
	// chose on its first call and keeps for the rest of the stream.
	planCache     map[planKey][]int
	streamDegrees []int
	// denseSwitchBytes: Allreduce of up to this many bytes takes the direct exchange
	// (negative: DefaultDenseSwitch).
	denseSwitchBytes int
	// layer0 is config's sort scratch (and SortLayer0's hash tables), kept between configs
	// (config_reduce streams) so that each one does not page-fault in fresh arrays.
	layer0 keyset.Layer0Scratch
	// rowKeyBuf is PackLayer0's row → key scratch (out, in), likewise kept: config's layer-0
	// messages carry slices of it, and it is free again once config has returned.
	rowKeyBuf [2][]uint64
	// denseBuf is where the members' copies of this rank's chunks land in dense allreduce;
	// smallBuf is this rank's own vector in the direct exchange of a small one.
	denseBuf []byte
	smallBuf []byte
	// one is the one-buffer list sendGroup.send hands the transport (no allocation a send).
	one [1][]byte
	// raceBase: the transport's racing counts at the last ResetStats (stats_replicas.go).
	raceBase []kx.RacePeerStats
	mu       sync.Mutex // guards broken/closed/raceBase against other goroutines
	// unusable is closed || broken != nil, readable without mu (mirrorUsable keeps it).
	unusable atomic.Bool
	// ex queues collectives issued while others are in flight (request.go).
	ex executor

	net netState // link model and index-codec estimates (links.go, links_compress.go)

	// Elastic membership (resize.go): the join client when elastic, each rank's number in the
	// comm this one was resized from (nil: an original comm), and the failed resizes of c.
	grower         kx.Grower
	prev           []int
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
	return &Comm{v: v, rec: stats.NewRecorder(), opts: opts, degrees: ds, denseSwitchBytes: -1, seq: v.Base()}, nil
}

// Rank and Size count processes, replicas included (kylix_rank, kylix_size).
func (c *Comm) Rank() int { return c.v.Rank() }
func (c *Comm) Size() int { return c.v.Size() }

// node and nodes are what the algorithms work with: with replication s, this rank's node and
// the number of nodes (size/s); without, the rank and the size.
func (c *Comm) node() int  { return c.v.Node() }
func (c *Comm) nodes() int { return c.v.Nodes() }

// threads is how many workers the data path may use (the threads option, at least 1).
func (c *Comm) threads() int { return max(c.opts.Threads, 1) }

// FailedRanks lists the ranks of this comm that have crashed or finalized, ascending
// (kylix_failed_ranks).
func (c *Comm) FailedRanks() []int { return c.v.FailedRanks() }

// mirrorUsable updates unusable after closed or broken changed; the caller holds mu.
func (c *Comm) mirrorUsable() { c.unusable.Store(c.closed || c.broken != nil) }

// Close ends the comm and its transport. Plans of a closed comm fail with CodeState.
// Requests in flight are finished first, in order: each wait in them is bounded by the
// transport's timeout, and a failure breaks the comm so the rest fail at once. When Close
// returns, no collective touches the caller's buffers any more.
func (c *Comm) Close() error {
	c.ex.waitIdle()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.mirrorUsable()
	return c.v.Close()
}
