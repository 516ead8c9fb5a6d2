package netio

import (
	"kylix/netio/internal/nettest"
	"sync"
)

var (
	wantErr = nettest.WantErr
	within  = nettest.Within
	noLeak  = nettest.NoLeak
	fpAll   = nettest.FPAll
	fpRed   = nettest.FPRed
)

// holdReads stops every data reader of t at its next frame, until release is called: a rank
// that reads nothing (its sockets and rings fill up). It takes the read tokens of the peers'
// sockets, or of their rings where data goes through one, which the reader goroutines give
// back while they wait for readiness (shared reading, Linux).
func holdReads(t *TCP) (release func()) {
	token := func(p *peer) *sync.Mutex {
		if p.link != nil {
			return &p.ringMu
		}
		return &p.rmu
	}
	for _, p := range t.peers {
		if p != nil {
			token(p).Lock()
		}
	}
	return func() {
		for _, p := range t.peers {
			if p != nil {
				token(p).Unlock()
			}
		}
	}
}
