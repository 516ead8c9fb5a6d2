package netio

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"kylix/core"
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
func (t *TCP) keepAlive(liveness time.Duration) {
	defer t.wg.Done()
	tick := time.NewTicker(liveness / heartbeatsPerPeriod)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
		now := time.Now()
		for _, p := range t.peers {
			if p == nil || t.mb.deadErr(p.rank) != nil {
				continue
			}
			if silent := now.Sub(time.Unix(0, t.mb.lastHeard[p.rank].Load())); silent > liveness {
				p.down(core.Errorf(core.CodePeer, "rank %d is lost: nothing heard from it for %v (liveness_ms %d: its process stopped, its host is down or the link is cut)",
					core.RankRef(p.rank), silent.Round(time.Millisecond), liveness.Milliseconds()))
				continue
			}
			p.heartbeat()
		}
	}
}

// heartbeat sends one heartbeat frame unless a frame is being written to p right now (its bytes
// tell p as much). It never waits: a peer that stopped reading must not hold up the others.
func (p *peer) heartbeat() {
	select {
	case p.wsem <- struct{}{}:
	default:
		return
	}
	defer p.unlock()
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameHeartbeat, Job: p.t.job, Seq: p.t.mb.currentSeq(), Src: p.t.rank})
	// The frame is 56 bytes: it fits any socket buffer that is not full, and a full one means
	// the peer has not read for a while; the short deadline keeps this goroutine going.
	p.conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := p.conn.Write(hb[:]); err != nil && !isTimeout(err) {
		p.down(lostError(p.rank, "heartbeat failed: "+err.Error()))
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
func (m *mailbox) reportStall(tag core.Tag, k msgKey, from int, waited time.Duration) {
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
	if srcs := m.sources(k, from); len(srcs) > 1 {
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
