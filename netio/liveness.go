package netio

import (
	"fmt"
	"kylix/core/kx"
	"os"
	"strconv"
	"strings"
	"time"
)

// Liveness (include/kylix.h, liveness_ms). A closed connection tells of a dead process at once,
// but a stopped process, a host that lost power or a cut link close nothing: TCP just goes quiet.
// So every rank sends each peer a small heartbeat frame a few times per liveness period, and a
// peer heard from neither by data nor by heartbeat for liveness_ms is dead: its connection is
// dropped, which fails every wait for it (and every write blocked on it) with CodePeer naming
// it. A peer that is alive but late to a collective keeps sending heartbeats, so it is waited
// for up to timeout_ms, which counts only data (mailbox.wait).

// heartbeatsPerPeriod is how many heartbeats go out per liveness period: a peer must miss
// that many in a row, which a loaded machine's scheduling hiccups never do.
const heartbeatsPerPeriod = 5

// DefaultStallReport is how often a wait that makes no progress logs (log=warn); the
// environment variable KYLIX_STALL_MS changes it (tests, impatient users), 0 turns it off.
const DefaultStallReport = time.Minute

// stallReportFromEnv reads KYLIX_STALL_MS.
func stallReportFromEnv() time.Duration {
	v := os.Getenv("KYLIX_STALL_MS")
	if v == "" {
		return DefaultStallReport
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		return DefaultStallReport
	}
	return time.Duration(ms) * time.Millisecond
}

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
			if p == nil || t.mb.deadErr(p.rank) != nil {
				continue
			}
			silent := now.Sub(time.Unix(0, t.mb.lastHeard[p.rank].Load()))
			if silent > liveness && !paused {
				if unread(p.conn) > 0 {
					t.mb.alive(p.rank)
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
	select {
	case p.wsem <- struct{}{}:
	default:
		return
	}
	defer p.unlock()
	if p.werr.Load() != nil {
		return // the peer closed its end: the reader tells when it is gone
	}
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameHeartbeat, Job: p.t.job, Seq: p.t.mb.currentSeq(), Src: p.t.rank})
	// A peer that does not make room for 56 bytes within liveness has not read for that long.
	// A write cut short by the deadline leaves half a frame on the stream: the connection is
	// then dropped (the peer is, by now, silent too). One that wrote nothing is harmless.
	p.conn.SetWriteDeadline(time.Now().Add(liveness))
	n, err := p.conn.Write(hb[:])
	switch {
	case err == nil || p.t.closing.Load() || n == 0 && isTimeout(err):
	case isTimeout(err):
		p.down(lostError(p.rank, "heartbeat cut short: the peer has not read for "+liveness.String()))
	default:
		p.writeBroken(err)
	}
}

// currentSeq is the collective this rank is in (or was last in).
func (m *mailbox) currentSeq() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// reportStall logs that a wait has made no progress for waited (Horovod's stall inspector): the
// collective, whom it waits for, and the ranks that have not called the collective yet.
func (m *mailbox) reportStall(tag kx.Tag, k msgKey, from int, waited time.Duration) {
	if m.warnf == nil {
		return
	}
	var late []string
	for r := range m.seqOf {
		if r != m.rank && m.dead[r] == nil && m.seqOf[r].Load() < tag.Seq+1 {
			late = append(late, strconv.Itoa(r))
		}
	}
	kind := "collective"
	if tag.Seq == m.cur {
		kind = m.fp.Kind.String()
	}
	who := fmt.Sprintf("rank %d", from)
	if srcs, _ := m.sources(k, from); srcs != nil {
		who = fmt.Sprintf("node %d (ranks %s)", k.src, joinInts(srcs))
	}
	notCalled := "every rank has called it"
	if len(late) > 0 {
		notCalled = "not called yet by rank(s) " + strings.Join(late, ", ")
	}
	m.warnf("stall: %v in %s (collective %d), waiting for the %s message of layer %d from %s; %s",
		waited.Round(time.Second), kind, tag.Seq, phaseName(tag.Phase), tag.Layer, who, notCalled)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
