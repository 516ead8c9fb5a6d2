package netio

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"kylix/netio/mesh"
	"time"
)

// Liveness (include/kylix.h, liveness_ms). A closed connection tells of a dead process at once,
// but a stopped process, a host that lost power or a cut link close nothing: TCP just goes quiet.
// So every rank sends each peer a small heartbeat frame a few times per liveness period, and a
// peer heard from neither by data nor by heartbeat for liveness_ms is dead: its connection is
// dropped, which fails every wait for it (and every write blocked on it) with CodePeer naming
// it. A peer that is alive but late to a collective keeps sending heartbeats, so it is waited
// for up to timeout_ms, which counts only data (mailbox/liveness.go).

// heartbeatsPerPeriod is how many heartbeats go out per liveness period: a peer must miss
// that many in a row, which a loaded machine's scheduling hiccups never do.
const heartbeatsPerPeriod = 5

// keepAlive runs until the transport closes: it sends heartbeats and drops peers that stay
// silent for liveness.
//
// Silence is judged with care, because a false death is worse than a late one. A peer counts as
// silent only when this rank's reader has heard nothing from it for liveness AND nothing from
// it waits unread in the socket (on a machine with more busy processes than cores, a reader
// can be kept off the CPU for a while; bytes that arrived meanwhile prove the peer alive). A
// tick that comes much later than due means this whole process was not running (stopped,
// swapped out, starved): it judges nobody, so the readers can catch up first.
func (t *TCP) keepAlive(liveness time.Duration) {
	defer t.wg.Done()
	every := liveness / heartbeatsPerPeriod
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		now := time.Now()
		paused := now.Sub(last) > 2*every
		last = now
		for _, p := range t.peers {
			if p == nil || t.mb.Dead(p.rank) != nil {
				continue
			}
			silent := t.mb.Silence(p.rank)
			if silent > liveness && !paused {
				if mesh.Unread(p.conn) > 0 {
					t.mb.Alive(p.rank)
				} else {
					p.down(kx.Errorf(kx.CodePeer, "rank %d is lost: nothing heard from it for %v (liveness_ms %d: its process stopped, its host is down or the link is cut)",
						kx.RankRef(p.rank), silent.Round(time.Millisecond), liveness.Milliseconds()))
					continue
				}
			}
			if p.beating.CompareAndSwap(false, true) {
				go p.heartbeat(liveness)
			}
		}
	}
}

// heartbeat sends one heartbeat frame unless a frame is being written to p right now (its bytes
// tell p as much). It runs on its own goroutine, so a peer that stopped reading holds up only
// its own heartbeats.
func (p *peer) heartbeat(liveness time.Duration) {
	defer p.beating.Store(false)
	if !p.w.TryLock() {
		return
	}
	defer p.unlock()
	if p.werr.Load() != nil {
		return // the peer closed its end: the reader tells when it is gone
	}
	seq, _ := p.t.mb.Current()
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameHeartbeat, Job: p.t.job, Seq: seq, Src: p.t.rank})
	// A peer that does not make room for 56 bytes within liveness has not read for that long.
	// A write cut short by the deadline leaves half a frame on the stream: the connection is
	// then dropped (the peer is, by now, silent too). One that wrote nothing is harmless.
	p.conn.SetWriteDeadline(time.Now().Add(liveness))
	n, err := p.conn.Write(hb[:])
	switch {
	case err == nil || p.t.closing.Load() || n == 0 && mesh.IsTimeout(err):
	case mesh.IsTimeout(err):
		p.down(mailbox.LostError(p.rank, "heartbeat cut short: the peer has not read for "+liveness.String()))
	default:
		p.writeBroken(p.sock, err)
	}
}
