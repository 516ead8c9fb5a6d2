// Package lanes is a TCP transport's lanes (kx.Lanes) between ranks of one host: the one small
// message a collective sends to a peer, written into a slot of the pair's shared-memory segment
// (netio/shm/lane.go) and read there in place, without a ring frame, the mailbox's filing or a
// driving wait. The transport (netio) makes a Set with what the lanes need of it: the segments,
// the mailbox's verdict on a collective, its deaths and its close.
//
// A lane's waits are the driving waits' in shape (netio/selfread_linux.go): spin where the
// host's ranks fit its CPUs, offer the CPU where they do not, then sleep until the peer's put
// wakes them; now and then they ask the mailbox whether the collective failed or the peer is
// gone, which the reader goroutines learn from the frames that say so.
package lanes

import (
	"kylix/core/kx"
	"time"
)

// Config is what a Set needs of its transport.
type Config struct {
	Size    int
	Timeout time.Duration // the bound on a wait for a peer (kx.Transport.Timeout)
	// Spin: waits may spin (this host's ranks fit its CPUs); else they yield between looks.
	Spin bool
	// The driving waits' windows: spin without offering the CPU (Quiet), spin offering it
	// (SpinFor), or yield at every look (YieldFor, where waits may not spin), then sleep.
	Quiet, SpinFor, YieldFor time.Duration
	// Check is the mailbox's verdict on a wait for rank from's message of collective tag.Seq:
	// nil while it may still come, else the collective's failure or the peer's loss.
	Check func(from int, tag kx.Tag) error
	// Dead is rank's loss (or finalization), nil while it is live.
	Dead func(rank int) error
	// Closed is the transport's error once it closes, else nil.
	Closed func() error
}

// nap bounds one sleep of a lane wait: the peer's put wakes it, and between naps it asks for the
// collective's failure, which nothing wakes it for.
const nap = 5 * time.Millisecond

// fingerprint words: a lane's count fits in 32 bits.
func metaOf(fp kx.Fingerprint) [2]uint64 {
	return [2]uint64{uint64(fp.Kind) | uint64(fp.Dtype)<<8 | uint64(fp.Op)<<16 | uint64(uint32(fp.Width))<<32,
		uint64(fp.Plan) | uint64(uint32(fp.Count))<<32}
}

func fpOf(m [2]uint64) kx.Fingerprint {
	return kx.Fingerprint{Kind: kx.Kind(m[0]), Dtype: uint8(m[0] >> 8), Op: uint16(m[0] >> 16), Width: int32(uint32(m[0] >> 32)),
		Plan: uint32(m[1]), Count: int64(uint32(m[1] >> 32))}
}
