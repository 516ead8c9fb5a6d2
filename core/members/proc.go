package members

import (
	"kylix/core/kx"
	"sync"
)

// Proc is a process transport shared by the comms that use it: the original comm and every comm
// shrunk from it. It is closed when the last of them lets go, so finalizing the old comm never
// closes connections a new one uses, in whichever order the comms are finalized.
type Proc struct {
	T    kx.Transport
	mu   sync.Mutex
	refs int
}

// NewProc takes ownership of t for one comm.
func NewProc(t kx.Transport) *Proc { return &Proc{T: t, refs: 1} }

func (p *Proc) acquire() {
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
}

func (p *Proc) release() error {
	p.mu.Lock()
	p.refs--
	last := p.refs == 0
	p.mu.Unlock()
	if last {
		return p.T.Close()
	}
	return nil
}
