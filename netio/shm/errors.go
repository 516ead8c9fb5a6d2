package shm

import (
	"errors"
	"fmt"
	"os"
)

// Errors are sentinel values (house style): the transport maps them once, e.g. a
// *PeerDeadError on the ring of rank N becomes "PEER: rank N died".
var (
	// ErrPeerDead matches every *PeerDeadError through errors.Is.
	ErrPeerDead = errors.New("shm: peer process died")
	// ErrPeerClosed: the other side closed the segment on purpose (Close), so no more
	// data will come, or nobody will read what we write. A reader that is mid-frame gets
	// it wrapped together with io.ErrUnexpectedEOF; at a frame boundary it gets io.EOF.
	ErrPeerClosed = errors.New("shm: peer closed the ring")
	// ErrClosed: this side's endpoint was closed (use after Close).
	ErrClosed = errors.New("shm: ring closed")
	// ErrAborted: the caller's abort channel was closed while waiting.
	ErrAborted = errors.New("shm: wait aborted")
	// ErrTimeout is os.ErrDeadlineExceeded, so callers test it as they do for net.Conn.
	ErrTimeout = os.ErrDeadlineExceeded
	// ErrBadSegment: a mapped segment is not one of ours, of another version, too small,
	// or its positions are inconsistent (a corrupted or hostile peer).
	ErrBadSegment = errors.New("shm: bad segment")
	// ErrUnsupported: shared memory rings need Linux (memfd, futex, pidfd).
	ErrUnsupported = errors.New("shm: unsupported on this platform")
	// ErrFrameState: a read past the current frame, or with no frame begun.
	ErrFrameState = errors.New("shm: read outside the current frame")
)

// PeerDeadError reports a peer that stopped existing (kill -9, crash, exit without
// Close) while we waited for it. Pid is the peer's pid as it wrote it in the segment.
type PeerDeadError struct {
	Pid int
}

func (e *PeerDeadError) Error() string {
	return fmt.Sprintf("shm: peer process %d died", e.Pid)
}

// Is makes errors.Is(err, ErrPeerDead) true.
func (e *PeerDeadError) Is(target error) bool { return target == ErrPeerDead }
