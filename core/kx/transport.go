package kx

import (
	"strconv"
	"sync/atomic"
	"time"
)

// AsyncSends counts the sends of this process running on goroutines of their own (large
// messages that do not go by reference, core/coll's Sends: those are posted, Sender.Post;
// writes left to slow replicas, netio's late sends). A transport
// whose waits read their sockets on the waiting thread (netio's caller-thread reads) waits the
// old way while any is running: a thread blocked in poll(2) keeps the only P of a
// GOMAXPROCS=1 rank, and the send would wait for the runtime's monitor to take it back.
var AsyncSends atomic.Int32

// Transport moves messages between the ranks of one job. core sees nothing else of the network:
// netio provides a TCP implementation (sockets and shared-memory rings) and an in-memory one
// with the same semantics. It is three narrow faces and the job's lifecycle: the Sender, the
// Receiver and a read-only view of the Peers.
//
// Messages are addressed by (sequence, layer, phase, source). Each collective call on a comm
// takes the next sequence number; every rank calls collectives in the same order, so the numbers
// agree. Within a collective, layer and phase tell messages apart.
type Transport interface {
	Rank() int
	Size() int
	// Timeout is the bound on any single wait for a peer.
	Timeout() time.Duration
	Sender() Sender
	Receiver() Receiver
	Peers() Peers
	// Abort tells every live peer that collective seq failed with err, so ranks waiting in it
	// fail at once instead of timing out.
	Abort(seq uint64, err error)
	// SetReplicaGroups turns on packet racing: rank r is a replica of node groupOf[r], and
	// messages with Tag.Race are keyed by the source's node, the first copy winning.
	SetReplicaGroups(groupOf []int) error
	Close() error
}

// Sender writes messages to peers, straight from the caller's buffers.
type Sender interface {
	// Send delivers the concatenation of bufs to rank `to` as one message, its frame carrying
	// tag.FP. bufs are not kept after Send returns (a writev straight from them). Sending to
	// oneself is allowed.
	Send(to int, tag Tag, bufs ...[]byte) error
	// SendOrLeave is Send for a racing copy: once leave is closed (or, with a nil leave, after a
	// short lag) a write still blocked on a slow peer finishes in the background, so that a
	// slow replica holds up nobody.
	SendOrLeave(to int, tag Tag, leave <-chan struct{}, bufs ...[]byte) error
	// Fits tells whether a Send of n bytes to rank would complete now, without waiting for
	// the peer to read (its ring or socket buffer has the room): core then sends a large
	// message on the calling thread instead of a goroutine of its own.
	Fits(rank, n int) bool
	// WritesBack tells whether a plain Send of n bytes to rank goes by reference (the peer
	// copies it out of this process's memory), so that a receiver folding it with
	// Fold.WriteBack may write its result over the sent bytes before the Send returns.
	WritesBack(rank, n int) bool
	// Post is Send for a message that goes by reference (WritesBack): it returns once the
	// frame that names bufs is written, before the peer has copied them, and bufs must stay
	// alive and unchanged until Complete returns for it. Any other message is sent as Send
	// sends it, and its Posted is already complete. Nothing runs on a goroutine of its own: a
	// collective's waits go on reading on the calling thread (netio's caller-thread reads
	// stand aside while a send does), and the peer's copy proceeds meanwhile.
	Post(to int, tag Tag, bufs ...[]byte) (Posted, error)
	// Complete waits until the peer no longer reads a posted message's buffers (its Send
	// would have returned then) and reports the send's outcome.
	Complete(p Posted) error
}

// Posted is a message Post wrote whose payload the peer may still be copying. The zero value
// is a message already complete.
type Posted struct {
	Rank int    // the peer, a rank of the transport
	Mark uint64 // the transport's: where the peer's copy ends; 0 when there is nothing to wait for
	Tag  Tag
	N    int // payload bytes
	// The caller's, for its bookkeeping at Complete: the node it sent to and its clock then.
	Node int
	T0   int64
}

// Receiver is the receive side: landing places posted for the running collective, waits, and
// payloads handed over. Every wait fails with CodeTimeout (silence for Timeout()), CodePeer
// (the peer died or finalized), CodeMismatch (fingerprint) or the code a peer reported through
// Abort for its sequence.
type Receiver interface {
	// Begin announces that this rank now runs collective seq with fingerprint fp: received
	// frames of seq that carry another fingerprint make waits fail with CodeMismatch naming the
	// sender and the field; frames of earlier sequences are dropped.
	Begin(seq uint64, fp Fingerprint)
	// Post names dst as the landing place of the message from rank `from` with tag, a
	// message of the current collective: its payload is read straight into dst (gloo's
	// prepareRead), so it never passes through a buffer of the transport's. A message that
	// arrived before the post is copied in. dst belongs to the transport until Await for it
	// returns or the collective ends; only the bytes of dst are ever written.
	//
	// With fold.Fn set the message is combined into dst instead of copied there (reduce on
	// receive): the payload passes through a small buffer of the transport's and fold.Fn
	// combines it, piece by piece, into the bytes of dst at the same offsets. Not for racing
	// messages (Tag.Race): copies from several replicas cannot each be folded.
	Post(from int, tag Tag, dst []byte, fold Fold)
	// Await waits until the message posted with Post has landed and returns its length; with
	// prefix >= 0, only until its first prefix bytes have (the front of a large message is
	// combined while the rest streams in; the length returned is then prefix). It fails with
	// CodeInternal naming the sender for a payload whose length is not len(dst).
	Await(from int, tag Tag, prefix int) (int, error)
	// Recv returns the payload of the message from rank `from` with tag, owned by the caller:
	// for messages whose size the receiver cannot know (config, agreement, bcast).
	Recv(from int, tag Tag) ([]byte, error)
	// Release gives a payload returned by Recv back to the transport for reuse; the caller
	// must not touch it afterwards. A payload never released is garbage collected.
	Release(b []byte)
	// Quiesce ends the landing places collective seq posted, which failed: places nobody
	// writes yet are withdrawn, a place a reader is filling is waited for, so that no caller's
	// memory is written after the call returns.
	Quiesce(seq uint64)
}

// Whole is Await's prefix for a wait on the whole message.
const Whole = -1

// Peers is what a transport knows of the other ranks, read-only.
type Peers interface {
	// SameHost tells whether messages to rank stay on this host (a copy through the kernel,
	// not a network link): compress=auto never compresses there.
	SameHost(rank int) bool
	// FailedRanks lists the peers this rank has seen crash or finalize, ascending.
	FailedRanks() []int
	// RaceStats returns, per rank, the racing copies received from it that won and lost, and
	// the bytes of the lost ones.
	RaceStats() []RacePeerStats
	// ShmStats returns the shared-memory figures, or nil for a transport without shared memory.
	ShmStats() *ShmStats
}

// Fold combines a message into its landing place as it arrives (Transport.ExpectFold). Fn
// gets each piece of the payload (src) with the bytes of the place it lands on (dst, as long);
// it may overwrite src, which is the transport's scratch. Every piece starts and ends on a
// multiple of Unit bytes (an element), and pieces come in order, front to back, on one goroutine
// at a time. The one extra pass over memory of landing a message and combining it afterwards
// stays in the cache.
//
// With WriteBack, a message that comes by reference from the sender's memory (single copy
// between ranks of one host, see WritesBack) also has each folded piece of dst written back
// over the sender's bytes it came from, before the sender's Send returns; WroteBack (when not
// nil) is then set true, by the time Await returns. A message read any other way (it came
// before its post, or by a copy) is folded but not written back.
type Fold struct {
	Unit      int
	Fn        func(dst, src []byte)
	WriteBack bool
	WroteBack *bool
}

// Tag names one message inside a collective.
type Tag struct {
	Seq   uint64
	Layer uint8
	Phase Phase
	// FP is the fingerprint of the collective the message belongs to, which its frame
	// carries: it travels with each send (core sets it for the running collective). The
	// receiving side checks frames against the fingerprint given to Begin.
	FP Fingerprint
	// Race marks a message of a replicated comm (core/members/view.go): it is sent to every live
	// replica of the destination node, and the receiver keys it by the source's node, takes the
	// first copy to arrive from any of its replicas and drops the others ("packet racing").
	Race bool
}

// Phase is the step of a collective a message belongs to.
type Phase uint8

// Message phases.
const (
	PhaseConfig     Phase = iota + 1 // index sets going down
	PhaseDown                        // values going down (scatter-reduce)
	PhaseUp                          // values coming back up (allgather)
	PhaseConfigDown                  // indices and values together (config_reduce)
	PhaseSmall                       // tiny dense exchanges (agreement on sizes, barrier)
	PhaseBcast
	PhaseDense
	PhaseLinks // link probes and their acknowledgements (links.go)
	PhaseReady // a receiver's word that the place a large message folds into is posted (core/dense/fold.go)
)

var phaseNames = [...]string{"", "config", "down", "up", "config-down", "small", "bcast",
	"dense", "links", "ready"}

// String names the phase in error messages ("down", "links").
func (p Phase) String() string {
	if int(p) < len(phaseNames) && p > 0 {
		return phaseNames[p]
	}
	return "phase " + strconv.Itoa(int(p))
}

// Kind of collective, carried in every frame's fingerprint.
type Kind uint8

const (
	KindInvalid Kind = iota // a rank whose arguments failed validation
	KindConfig
	KindReduce
	KindConfigReduce
	KindAllreduce
	KindBcast
	KindBarrier
	KindMix
	KindAgree // internal agreement exchange (degrees=auto)
	KindLinks // link measurement (MeasureLinks)
)

// NumKinds counts the kinds, KindInvalid included.
const NumKinds = len(kindNames)

var kindNames = [...]string{"invalid-arguments", "config", "reduce", "config_reduce", "allreduce",
	"bcast", "barrier", "mix", "agree", "links"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Fingerprint is what every rank must agree on for a collective. It travels in each frame
// header, so a rank that called something else is detected by whoever hears from it.
type Fingerprint struct {
	Kind  Kind
	Dtype uint8
	Op    uint16
	Width int32
	Plan  uint32
	Count int64 // dense element count, bcast bytes/root; 0 where not meaningful
}

// Diff names the first field in which f and g differ, or "" when they agree.
func (f Fingerprint) Diff(g Fingerprint) string {
	switch {
	case f.Kind != g.Kind:
		return "collective (" + f.Kind.String() + " vs " + g.Kind.String() + ")"
	case f.Plan != g.Plan:
		return "plan"
	case f.Dtype != g.Dtype:
		return "dtype"
	case f.Op != g.Op:
		return "op"
	case f.Width != g.Width:
		return "width"
	case f.Count != g.Count:
		return "count"
	}
	return ""
}

// ShmStats are a rank's shared-memory figures (kylix_stats_json "shm"), from a transport that
// has them (netio's TCP): the peers it reaches through a segment, the ranks it found on its
// host, whether waits may spin there, and the slow paths of the waits on its rings, so that
// an oversubscribed host can be shown never to spin without a timing.
type ShmStats struct {
	Peers       int    `json:"peers"`
	RanksOnHost int    `json:"ranks_on_host"`
	SpinAllowed bool   `json:"spin_allowed"`
	Spins       uint64 `json:"spins"`     // waits that spun before sleeping
	SpinHits    uint64 `json:"spin_hits"` // of those, satisfied while spinning
	Yields      uint64 `json:"yields"`    // waits that gave the CPU away between looks before sleeping (no spin allowed)
	Sleeps      uint64 `json:"sleeps"`    // sleeps (futex, doorbell or poll(2))
	WakesSent   uint64 `json:"wakes_sent"`
	// Single copy (netio/shmref_linux.go): frames read straight out of a peer's memory, and
	// the bytes a folding reader wrote back over a peer's data (dense allreduce's last layer).
	RefFrames   uint64 `json:"ref_frames"`
	WrittenBack uint64 `json:"written_back_bytes"`
	// Lanes (netio/shm/lane.go): messages read from a peer's lane, and lane waits that slept.
	LaneMsgs   uint64 `json:"lane_msgs"`
	LaneSleeps uint64 `json:"lane_sleeps"`
	// The comm's small allreduces over the lanes that the C ABI ran without entering Go
	// (capi/express.c); their messages are among LaneMsgs.
	ExpressCalls uint64 `json:"express_calls"`
}

// MaxPayload bounds a single message. A transport refuses to read a frame announcing more before
// it allocates anything, so a corrupt or hostile length cannot exhaust memory; Send refuses
// larger messages with CodeArg (CheckSend), so core cuts bigger transfers into pieces.
const MaxPayload = 1 << 32

// CheckSend is a transport's check of a send of bufs to rank `to` of a job of size ranks: the
// message's length, or CodeArg naming the destination or the length.
func CheckSend(to, size int, bufs [][]byte) (n int, err error) {
	if to < 0 || to >= size {
		return 0, Errorf(CodeArg, "send: destination rank %d is not in 0..%d", RankRef(to), size-1)
	}
	for _, b := range bufs {
		n += len(b)
	}
	if uint64(n) > MaxPayload {
		return 0, Errorf(CodeArg, "send: message of %d bytes to rank %d exceeds the frame bound of %d", n, RankRef(to), uint64(MaxPayload))
	}
	return n, nil
}
