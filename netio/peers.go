package netio

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"net"
)

// tcpPeers is TCP's kx.Peers: the mailbox's FailedRanks and RaceStats, and SameHost and
// ShmStats from the transport.
type tcpPeers struct {
	*mailbox.Mailbox
	t *TCP
}

func (p tcpPeers) SameHost(rank int) bool { return p.t.SameHost(rank) }
func (p tcpPeers) ShmStats() *kx.ShmStats {
	s := p.t.ShmStats()
	return &s
}

// SameHost tells whether the connection to rank joins this host to itself: a shared-memory
// link, or both ends on one address, or a loopback one. There the "link" is a copy through the kernel, and compress=auto
// never compresses: coding a key costs more than copying the bytes it saves.
func (t *TCP) SameHost(rank int) bool {
	if rank < 0 || rank >= len(t.peers) || t.peers[rank] == nil {
		return rank == t.rank
	}
	if t.peers[rank].ring() != nil {
		return true
	}
	c := t.peers[rank].conn
	la, lok := c.LocalAddr().(*net.TCPAddr)
	ra, rok := c.RemoteAddr().(*net.TCPAddr)
	return lok && rok && (ra.IP.IsLoopback() || la.IP.Equal(ra.IP))
}

// WritesBack: a data frame of n bytes to a rank of this host goes by reference (shmref_linux.go).
func (t *TCP) WritesBack(rank, n int) bool {
	if rank == t.rank || rank < 0 || rank >= t.size || t.peers[rank] == nil {
		return false
	}
	l := t.peers[rank].ring()
	return l != nil && l.byRef(uint64(n))
}

// Fits tells whether a frame of n payload bytes to rank goes out now: its ring has the
// room, or its socket's send buffer has twice the room (the kernel counts its own overhead
// against the buffer too). False while another write to rank holds its write lock.
func (t *TCP) Fits(rank, n int) bool {
	if rank == t.rank {
		return true
	}
	if rank < 0 || rank >= t.size || t.peers[rank] == nil {
		return false
	}
	p := t.peers[rank]
	if !p.w.TryLock() {
		return false
	}
	defer p.unlock()
	if p.lateBusy() {
		return false
	}
	return p.data.fits(n)
}
