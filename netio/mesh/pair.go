package mesh

import "kylix/netio/shm"

// Pair is what the set-up of one connection learnt about shared memory with its peer
// (pair_linux.go).
type Pair struct {
	Seg      *shm.Segment // nil: the pair talks over TCP
	SameHost bool         // the peer runs on this host, whether or not a segment was made
}

// Close closes the pair's segment, if one was made (a mesh that failed after the set-up).
func (p Pair) Close() {
	if p.Seg != nil {
		p.Seg.Close()
	}
}
