package netio

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"net"
	"sync"
	"time"
)

// Sending to a slow replica (replication; "Kylix: A Sparse Allreduce for Commodity Clusters", §V, "packet racing"). A node's
// message goes to every replica of the destination node, and the receiver uses whichever copy
// comes first. A replica that is slow to read (its process stopped for a moment, its link
// slower) must then cost the sender nothing either: SendOrLeave returns once the copy is
// written, or once the caller says the copy is no longer urgent (leave: another replica's
// copy is written) or, for a message with no leave, once it has waited smallLag. What is
// left of the frame is copied and written in the background (the peer's late queue), in
// order, while the caller goes on. The copy costs a memcpy of the rest, paid only when a
// replica lags.

// smallLag is how long a racing send with no leave signal may wait for a slow replica before
// the rest is left to the background: far more than a write into a socket with room takes.
const smallLag = 2 * time.Millisecond

// lateCap bounds the bytes queued for one slow peer; beyond it senders wait (the peer is
// declared dead after liveness_ms if it stopped reading altogether).
const lateCap = 256 << 20

// lateQueue holds encoded frame bytes a slow peer has yet to take, in order.
type lateQueue struct {
	mu       sync.Mutex
	room     sync.Cond // signalled as bytes leave the queue
	items    [][]byte  // pooled buffers: whole frames, or the rest of one
	bytes    int
	draining bool // a drain goroutine owns the peer's write lock
}

// SendOrLeave is Send for a racing copy (core/members/datapath.go): see above. leave may be nil.
func (t *TCP) SendOrLeave(to int, tag kx.Tag, leave <-chan struct{}, bufs ...[]byte) error {
	h, n, done, err := t.prepareSend(to, tag, bufs)
	if done || err != nil {
		return err
	}
	p := t.peers[to]
	if p.lateBusy() { // keep the frames in order behind those already queued
		return p.enqueue(frameBytes(&h, bufs, n), false, n)
	}
	return p.data.sendOrLeave(h, bufs, n, leave)
}

// sendOrLeave is SendOrLeave on a socket: a write still blocked when leave is closed (or, with
// a nil leave, after a short lag) hands what is left of the frame to the late queue.
func (l *sockLink) sendOrLeave(h Header, bufs [][]byte, n int, leave <-chan struct{}) error {
	p := l.p
	d := &detacher{}
	if leave == nil {
		d.lagBy = time.Now().Add(smallLag)
	} else {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-leave:
				d.ask()
			case <-stop:
			}
		}()
	}
	if !p.lockOrLeave(d, leave) {
		return p.enqueue(frameBytes(&h, bufs, n), false, n)
	}
	if err := p.writable(); err != nil {
		p.unlock()
		return err
	}
	rest, err := l.writeFrame(&h, bufs, time.Time{}, d)
	d.finish()
	if rest != nil {
		return p.enqueue(rest, true, n) // the drain goroutine takes over the write lock
	}
	p.unlock()
	if err == nil {
		p.t.count(p.rank, n, true)
	}
	return err
}

// lockOrLeave takes the write lock unless the detacher's lag passes or leave closes first.
func (p *peer) lockOrLeave(d *detacher, leave <-chan struct{}) bool {
	if p.w.TryLock() {
		return true
	}
	var lag <-chan time.Time
	if !d.lagBy.IsZero() {
		tm := time.NewTimer(time.Until(d.lagBy))
		defer tm.Stop()
		lag = tm.C
	}
	return p.w.LockOr(lag, leave)
}

// frameBytes encodes a whole frame into one pooled buffer.
func frameBytes(h *Header, bufs [][]byte, n int) []byte {
	b := mailbox.GetBuf(HeaderSize + n)
	EncodeHeader(b, h)
	off := HeaderSize
	for _, x := range bufs {
		off += copy(b[off:], x)
	}
	return b
}

// remainder copies what a cut-short writev left unwritten (iov, consumed by WriteTo as it
// went) and the buffers after it (bufs from i, off) into one pooled buffer.
func remainder(iov net.Buffers, bufs [][]byte, i, off int) []byte {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	for k := i; k < len(bufs); k++ {
		if k == i {
			n += len(bufs[k]) - off
		} else {
			n += len(bufs[k])
		}
	}
	out := mailbox.GetBuf(n)
	w := 0
	for _, b := range iov {
		w += copy(out[w:], b)
	}
	for k := i; k < len(bufs); k++ {
		if k == i {
			w += copy(out[w:], bufs[k][off:])
		} else {
			w += copy(out[w:], bufs[k])
		}
	}
	return out
}

func (p *peer) lateBusy() bool {
	q := &p.late
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.draining || len(q.items) > 0
}

// enqueue queues b (counted as a sent message of n payload bytes) and makes sure a drain
// goroutine writes it; haveLock hands it the write lock the caller holds.
func (p *peer) enqueue(b []byte, haveLock bool, n int) error {
	q := &p.late
	q.mu.Lock()
	if q.room.L == nil {
		q.room.L = &q.mu
	}
	for q.bytes > 0 && q.bytes+len(b) > lateCap && !haveLock && p.writable() == nil {
		q.room.Wait()
	}
	if err := p.writable(); err != nil {
		q.mu.Unlock()
		mailbox.PutBuf(b)
		if haveLock {
			p.unlock()
		}
		return err
	}
	q.items = append(q.items, b)
	q.bytes += len(b)
	start := !q.draining
	q.draining = true
	q.mu.Unlock()
	switch {
	case haveLock && start:
		kx.AsyncSends.Add(1)
		go p.drain(true)
	case haveLock: // cannot happen: a queue being drained holds the lock
		p.unlock()
	case start:
		kx.AsyncSends.Add(1)
		go p.drain(false)
	}
	p.t.count(p.rank, n, true)
	return nil
}

// drain writes the late queue until it is empty, holding the write lock throughout. A failed
// write drops the rest: the peer is gone (or declared so).
func (p *peer) drain(haveLock bool) {
	defer kx.AsyncSends.Add(-1)
	t := p.t
	q := &p.late
	if !haveLock {
		for !p.lock(time.Now().Add(t.timeout)) {
			if p.writable() != nil || t.closing.Load() {
				p.dropLate()
				return
			}
		}
	}
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.draining = false
			q.room.Broadcast()
			q.mu.Unlock()
			p.unlock()
			return
		}
		b := q.items[0]
		q.items[0] = nil
		q.items = q.items[1:]
		q.mu.Unlock()
		err := p.writable()
		if err == nil {
			err = p.data.writeRaw(b)
		}
		q.mu.Lock()
		q.bytes -= len(b)
		q.room.Broadcast()
		q.mu.Unlock()
		mailbox.PutBuf(b)
		if err != nil {
			p.unlock()
			p.dropLate()
			return
		}
	}
}

// dropLate empties the late queue of a peer that is gone.
func (p *peer) dropLate() {
	q := &p.late
	q.mu.Lock()
	for _, b := range q.items {
		mailbox.PutBuf(b)
	}
	q.items, q.bytes, q.draining = nil, 0, false
	if q.room.L != nil {
		q.room.Broadcast()
	}
	q.mu.Unlock()
}

// waitLate waits until the late queue is written or the peer is gone (Close: a finalizing rank
// still owes a lagging replica these frames, and it may need them to finish). A peer that
// stopped reading is declared dead after liveness_ms, which ends the wait; deadline bounds it
// in any case.
func (p *peer) waitLate(deadline time.Time) {
	for p.lateBusy() && p.writable() == nil && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}

// detacher lets a write be cut short so its rest can go to the background (writeFrame).
type detacher struct {
	mu       sync.Mutex
	conn     net.Conn  // the connection being written, once armed
	askedFor bool      // leave closed
	lagBy    time.Time // without leave: detach at this time
	done     bool      // the write is over: asking no longer touches the connection
}

var longAgo = time.Unix(1, 0)

// arm sets the write deadline of the next chunk: normal, or at once when asked already, or at
// the lag.
func (d *detacher) arm(conn net.Conn, normal time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.conn = conn
	switch {
	case d.askedFor:
		conn.SetWriteDeadline(longAgo)
	case !d.lagBy.IsZero() && d.lagBy.Before(normal):
		conn.SetWriteDeadline(d.lagBy)
	default:
		conn.SetWriteDeadline(normal)
	}
}

// ask cuts the write short (its deadline passes at once), unless it is over.
func (d *detacher) ask() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.askedFor = true
	if d.conn != nil && !d.done {
		d.conn.SetWriteDeadline(longAgo)
	}
}

// asked reports whether a timed-out write was cut short on purpose.
func (d *detacher) asked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.askedFor || !d.lagBy.IsZero() && !time.Now().Before(d.lagBy)
}

// finish marks the write over (before the write lock is released, so a late ask cannot touch
// the next writer's deadline).
func (d *detacher) finish() {
	d.mu.Lock()
	d.done = true
	d.mu.Unlock()
}
