package netio

import "kylix/netio/internal/nettest"

var (
	wantErr = nettest.WantErr
	within  = nettest.Within
	noLeak  = nettest.NoLeak
	fpAll   = nettest.FPAll
	fpRed   = nettest.FPRed
)

// holdReads stops every data reader of t at its next frame, until release is called: a rank
// that reads nothing (its sockets and rings fill up). It takes the read tokens of the peers'
// data links, which the reader goroutines give back while they wait for readiness (shared
// reading, Linux).
func holdReads(t *TCP) (release func()) {
	for _, p := range t.peers {
		if p != nil {
			p.data.rd().tok.Lock()
		}
	}
	return func() {
		for _, p := range t.peers {
			if p != nil {
				p.data.rd().tok.Unlock()
			}
		}
	}
}
