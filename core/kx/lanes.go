package kx

// Lanes is what a transport may have besides its Sender and Receiver (a Transport that has
// them implements it): the one small message a collective sends to a peer of this host,
// written into a slot of memory both processes map and read there in place (netio: the
// shared-memory segment's lanes; memnet: slots in memory), without the frames, the mailbox's
// filing and the driving waits of a Send and a Recv. A small step's cost on one host is that
// software, not the copy (docs/measurements.md, "Lanes").
//
// A lane message is keyed by its collective's sequence number: every rank sends at most one
// to each peer in a collective, and reads it in any order with the peer's other messages.
// Payloads are at most LaneMax(rank) bytes.
type Lanes interface {
	// ClaimLanes gives the lanes to one comm of the transport: true for the first caller
	// only, since two comms would write the same slots.
	ClaimLanes() bool
	// LaneMax is the largest payload of the lane to rank, 0 where there is none.
	LaneMax(rank int) int
	// LanePut writes b to rank to's lane as collective tag.Seq's message, carrying tag.FP. It
	// waits only while the peer has not read its last two messages.
	LanePut(to int, tag Tag, b []byte) error
	// LaneAwait waits for rank from's lane message of collective tag.Seq and returns the
	// fingerprint it carries and its payload, a view of the shared memory that stays valid and
	// unchanged until LaneDone. It fails as the Receiver's waits do: the collective failed (a
	// peer's abort, a frame of another fingerprint), the peer died or finalized, or it sent
	// nothing for Timeout().
	LaneAwait(from int, tag Tag) (Fingerprint, []byte, error)
	// LaneDone ends a LaneAwait that succeeded: the peer may write over its payload again.
	LaneDone(from int, tag Tag)
}

// LaneLender is what a transport with lanes in shared memory may have besides (netio's): a
// lane lent out of Go, whose protocol code that is not Go runs between the lender's calls (the
// C ABI's express allreduce, capi/express.c) on the mapped words, from the loan's copy of the
// lane's state, until ReturnLane takes the state and the borrower's counts back. No lane call
// is made on a lent lane.
type LaneLender interface {
	LendLane(rank int) (LaneLoan, bool)
	ReturnLane(rank int, l *LaneLoan)
}

// LaneLoan is one lane lent: the addresses of its words in the mapping (valid until it is
// returned; netio/shm/lane_loan.go says what they hold), its state, whether its waits may spin
// (this host's ranks fit its CPUs), and what the borrower counted.
type LaneLoan struct {
	Put, Look                           [2]uintptr // this side's slots, the peer's
	AckWord, PeerAckWord, PeerSleepWord uintptr
	Seq                                 [2]uint64 // the sequence last put in each of this side's slots
	PeerAcked, Acked                    uint64    // at most the peer's acknowledgement; this side's
	Spin                                bool
	// counted by the borrower: messages put and read, their bytes, futex wakes sent
	Sent, Read, BytesSent, BytesRead, Wakes uint64
}
