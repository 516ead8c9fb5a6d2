package mailbox

import (
	"kylix/core/kx"
	"sync/atomic"
	"time"
)

// liveness is the mailbox's clock of each peer: when data and any sign of life last came from
// it, and the latest collective it told of. Transports judge a silent peer by it (TCP's
// keepAlive); waits time out by the data clock alone, so a peer that is alive but late to a
// collective (it keeps sending heartbeats) is waited for up to timeout_ms.
type liveness struct {
	// lastData[r] is when data bytes from r last arrived (kx.FastMono: every frame received is stamped with it): a wait on r times out only
	// after timeout without data, so a large message still streaming in is not a late peer.
	// lastHeard[r] is when anything (data, heartbeat) last came from r.
	lastData, lastHeard []atomic.Int64
	// seqOf[r] is 1 + the latest collective r told of (its frames and heartbeats carry it), 0
	// before any: a stalled wait names the ranks that have not called its collective yet.
	seqOf []atomic.Uint64
}

func newLiveness(size int) liveness {
	l := liveness{lastData: make([]atomic.Int64, size), lastHeard: make([]atomic.Int64, size),
		seqOf: make([]atomic.Uint64, size)}
	now := kx.MonoNow()
	for r := range l.lastHeard {
		l.lastHeard[r].Store(now) // a peer's silence counts from the start
	}
	return l
}

// heard records data bytes from src (which also prove it alive).
func (l *liveness) heard(src int) {
	if src >= 0 && src < len(l.lastHeard) {
		// Relaxed stores: every frame received passes here, and a stamp needs no fence (its
		// readers judge silence in milliseconds; concurrent stamps are the same moment). The
		// counter's clock, for the same reason: it lags MonoNow by nanoseconds.
		now := kx.FastMono()
		kx.StoreRelaxedInt64(&l.lastData[src], now)
		kx.StoreRelaxedInt64(&l.lastHeard[src], now)
	}
}

// alive records a sign of life from src that carries no data (a heartbeat, unread bytes).
func (l *liveness) alive(src int) {
	if src >= 0 && src < len(l.lastHeard) {
		l.lastHeard[src].Store(kx.MonoNow())
	}
}

// calling records that src has reached collective seq (a frame or heartbeat of it).
func (l *liveness) calling(src int, seq uint64) {
	if src < 0 || src >= len(l.seqOf) {
		return
	}
	for {
		old := l.seqOf[src].Load()
		if old >= seq+1 || l.seqOf[src].CompareAndSwap(old, seq+1) {
			return
		}
	}
}

// silence is how long nothing has been heard from r.
func (l *liveness) silence(r int) time.Duration {
	return time.Duration(kx.MonoNow() - l.lastHeard[r].Load())
}

// latestData is the latest data from any of srcs, or from one when srcs is nil (kx.MonoNow).
func (l *liveness) latestData(srcs []int, one int) int64 {
	if srcs == nil {
		return l.lastData[one].Load()
	}
	var last int64
	for _, r := range srcs {
		last = max(last, l.lastData[r].Load())
	}
	return last
}

// called reports whether r has told of collective seq (or a later one).
func (l *liveness) called(r int, seq uint64) bool { return l.seqOf[r].Load() >= seq+1 }

// Heartbeat records a heartbeat from src, which is in collective seq.
func (m *Mailbox) Heartbeat(src int, seq uint64) {
	m.live.alive(src)
	m.live.calling(src, seq)
}

// Alive records a sign of life from src that carries no data (bytes from it wait unread).
func (m *Mailbox) Alive(src int) { m.live.alive(src) }

// Silence is how long nothing has been heard from rank r.
func (m *Mailbox) Silence(r int) time.Duration { return m.live.silence(r) }
