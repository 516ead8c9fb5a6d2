package core

import (
	"sync"
)

// Comm is one rank's membership in a job: a transport plus the agreed sequence of collectives.
// One goroutine at a time may use a Comm (SPEC §2); plans of one comm share its sequence.
type Comm struct {
	t        Transport
	opts     Options
	degrees  []int // fixed degrees from the option, nil for auto
	seq      uint64
	nextPlan uint32
	broken   error // set by a peer failure or timeout: later calls fail with CodeState
	closed   bool
	// denseSwitchBytes: Allreduce of up to this many bytes takes the direct exchange
	// (negative: DefaultDenseSwitch).
	denseSwitchBytes int
	mu               sync.Mutex // guards broken/closed against Close from another goroutine
}

// NewComm wraps a connected transport. opts.Degrees and opts.MinPacket steer planning.
func NewComm(t Transport, opts Options) (*Comm, error) {
	m := t.Size() / max(opts.Replication, 1)
	ds, err := ParseDegreesSpec(opts.Degrees, m)
	if err != nil {
		return nil, err
	}
	if opts.Replication > 1 {
		return nil, Errorf(CodeArg, "replication: %d > 1 is not implemented yet", opts.Replication)
	}
	return &Comm{t: t, opts: opts, degrees: ds, denseSwitchBytes: -1}, nil
}

func (c *Comm) Rank() int { return c.t.Rank() }
func (c *Comm) Size() int { return c.t.Size() }

// Transport exposes the underlying transport (stats, tests).
func (c *Comm) Transport() Transport { return c.t }

// Close ends the comm and its transport. Plans of a closed comm fail with CodeState.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.t.Close()
}
