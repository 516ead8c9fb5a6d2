package netio

import (
	"kylix/core/kx"
	"kylix/netio/cpus"
)

// spinAllowed is cpus.SpinAllowed: a wait on a ring may spin only while this host's ranks fit
// its usable CPUs. A variable so that tests can play either host.
var spinAllowed = cpus.SpinAllowed

// shmPair is what the set-up of one connection learnt about shared memory with its peer
// (shmlink_linux.go).
type shmPair struct {
	link     *ringLink // nil: the pair talks over TCP
	sameHost bool      // the peer runs on this host, whether or not a link was made
}

// ShmStats are a rank's shared-memory figures (kx.ShmStats; TCP.ShmStats).
type ShmStats = kx.ShmStats

// close closes the pair's ring, if one was made (a mesh that failed after the set-up).
func (s shmPair) close() {
	if s.link != nil {
		s.link.close()
	}
}
