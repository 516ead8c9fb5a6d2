package netio

import (
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/netio/internal/wlock"
	"kylix/netio/lanes"
	"kylix/netio/mailbox"
	"kylix/netio/mesh"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// TCP is the network transport: one long-lived, authenticated connection per peer (built by
// Connect), one reader goroutine per connection filing frames into the mailbox, and writes
// straight from the caller's buffers with writev.
type TCP struct {
	rank, size int
	job        uint64
	timeout    time.Duration
	mb         *mailbox.Mailbox
	stallNote  atomic.Pointer[func(msg string)] // NoteStalls
	peers      []*peer                          // by rank; nil for this rank
	stats      []kx.PeerCounters
	closing    atomic.Bool
	closeOnce  sync.Once
	wg         sync.WaitGroup // reader goroutines and keepAlive
	done       chan struct{}  // closed by Close: keepAlive stops

	ranksOnHost int       // this rank and the peers found on its host at set-up
	spin        bool      // waits on shared-memory rings may spin (spinAllowed(ranksOnHost))
	sr          selfReads // waits that read their sockets on their own thread (selfread_linux.go)

	// The lanes (kx.Lanes, netio/lanes: its methods are TCP's), made once the rings are known
	// (makeLanes, shmlink_linux.go).
	*lanes.Set
}

type peer struct {
	t    *TCP
	rank int
	conn net.Conn // heartbeats, and the bye that tells a finalized peer from a dead one, go here
	sock *sockLink
	data link       // data, abort and bye frames: sock, or a ring (ringLink)
	w    wlock.Lock // the write lock (netio/internal/wlock)

	downOnce sync.Once
	beating  atomic.Bool           // a heartbeat goroutine is running for this peer (liveness.go)
	werr     atomic.Pointer[error] // set once a write failed: later writes fail with it
	late     lateQueue             // frames a slow replica has yet to take (latesend.go)
	readDone chan struct{}         // closed when the socket's readLoop returns
}

// writeChunk is how much one writev may carry before the write deadline is pushed on: the
// deadline bounds silence (a peer that stops reading), not the length of a large message.
const writeChunk = 8 << 20

// newTCP wraps established, handshaken connections (conns[rank] is nil) and the shared-memory
// links agreed with peers of this host (pairs, may be nil), and starts the readers.
func newTCP(rank, size int, job uint64, timeout time.Duration, conns []net.Conn, pairs []mesh.Pair) *TCP {
	t := &TCP{rank: rank, size: size, job: job, timeout: timeout,
		mb: mailbox.New(rank, size, timeout), peers: make([]*peer, size), stats: make([]kx.PeerCounters, size),
		done: make(chan struct{}), ranksOnHost: 1}
	var rings []*ringLink
	for r, c := range conns {
		if c == nil || r == rank {
			continue
		}
		p := &peer{t: t, rank: r, conn: c, w: wlock.New(), readDone: make(chan struct{})}
		p.sock = newSockLink(p)
		p.data = p.sock
		if r < len(pairs) {
			if pairs[r].SameHost {
				t.ranksOnHost++
			}
			if seg := pairs[r].Seg; seg != nil {
				l := newRingLink(p, seg)
				p.data = l
				rings = append(rings, l)
			}
		}
		t.peers[r] = p
	}
	// Spinning needs to know who shares this host, which only the shared-memory hello tells.
	t.spin = pairs != nil && spinAllowed(t.ranksOnHost)
	setSpin(rings, t.spin)
	t.Set = t.makeLanes()
	t.startSelfRead()
	for _, p := range t.peers {
		if p != nil {
			t.wg.Add(1)
			go t.readLoop(p, p.sock)
			if p.data != link(p.sock) {
				t.wg.Add(1)
				go t.readLoop(p, p.data)
			}
		}
	}
	return t
}

// NoteStalls hands every stall report to note as well as to the log (the comm's timeline
// records them as instants), whatever the log level. note runs on the waiting thread.
func (t *TCP) NoteStalls(note func(msg string)) { t.stallNote.Store(&note) }

// configure applies the options that shape a running transport: heartbeats and the liveness
// bound, and stall reports when the log level includes warnings.
func (t *TCP) configure(o kx.Options) *TCP {
	level := kx.ParseLogLevel(o.Log)
	t.mb.SetStallReports(mailbox.StallReportFromEnv(), func(format string, args ...any) {
		if level >= kx.LogWarn {
			kx.Logf(kx.LogWarn, level, t.rank, format, args...)
		}
		if note := t.stallNote.Load(); note != nil {
			(*note)(fmt.Sprintf(format, args...))
		}
	})
	if o.Liveness > 0 && t.size > 1 {
		t.wg.Add(1)
		go t.keepAlive(o.Liveness)
	}
	return t
}

// SetReplicaGroups turns on packet racing (mailbox/race.go): rank r is a replica of node groupOf[r].
func (t *TCP) SetReplicaGroups(groupOf []int) error { return t.mb.SetReplicaGroups(groupOf) }

// Sender is t itself; Receiver its mailbox, which the frames read from the links land in and
// whose waits read the links first (receiver.go); Peers
// the mailbox's record of failures and races with what t knows of each peer's host.
func (t *TCP) Sender() kx.Sender     { return t }
func (t *TCP) Receiver() kx.Receiver { return receiver{t.mb, t} }
func (t *TCP) Peers() kx.Peers       { return tcpPeers{t.mb, t} }

func (t *TCP) Rank() int              { return t.rank }
func (t *TCP) Size() int              { return t.size }
func (t *TCP) Timeout() time.Duration { return t.timeout }

// Job is the id every frame of this job carries.
func (t *TCP) Job() uint64 { return t.job }

// Stats returns the data messages exchanged with each rank (index = rank, this rank included).
func (t *TCP) Stats() []kx.PeerStats {
	all := kx.Snapshot(t.stats)
	for r, l := range t.Set.Stats() {
		all[r].BytesSent += l.BytesSent
		all[r].MsgsSent += l.MsgsSent
		all[r].BytesRecv += l.BytesRecv
		all[r].MsgsRecv += l.MsgsRecv
	}
	return all
}

func (t *TCP) closedErr() error {
	return kx.Errorf(kx.CodeState, "transport of rank %d is closed", kx.RankRef(t.rank))
}

// Send writes one data frame to rank to: the header and bufs go out in one writev, straight from
// the caller's memory. Sending to oneself copies into the own mailbox.
func (t *TCP) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	h, n, done, err := t.prepareSend(to, tag, bufs)
	if done || err != nil {
		return err
	}
	if err := t.peers[to].write(&h, bufs, time.Time{}); err != nil {
		return err
	}
	t.count(to, n, true)
	return nil
}

// Post is Send, except that a data frame that goes by reference (shmref_linux.go) returns
// once its frame is written; Complete then waits for the peer's copy (kx.Sender.Post).
func (t *TCP) Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error) {
	h, n, done, err := t.prepareSend(to, tag, bufs)
	if done || err != nil {
		return kx.Posted{}, err
	}
	p := t.peers[to]
	end, err := p.post(&h, bufs, time.Time{})
	if err != nil {
		return kx.Posted{}, err
	}
	if end == 0 { // written whole
		t.count(to, n, true)
		return kx.Posted{}, nil
	}
	return kx.Posted{Rank: to, Mark: end, Tag: tag, N: n}, nil
}

// Complete waits until the peer copied a posted message's payload (kx.Sender.Complete).
func (t *TCP) Complete(ps kx.Posted) error {
	if ps.Mark == 0 {
		return nil
	}
	h := Header{Type: FrameData, Layer: ps.Tag.Layer, Phase: phaseByte(ps.Tag), Job: t.job, Seq: ps.Tag.Seq,
		FP: ps.Tag.FP, Src: t.rank, Len: uint64(ps.N)}
	if err := t.peers[ps.Rank].awaitRefCopied(&h, ps.Mark); err != nil {
		return err
	}
	t.count(ps.Rank, ps.N, true)
	return nil
}

// prepareSend checks a send and builds its frame header; a send to this rank itself is done
// at once (done).
func (t *TCP) prepareSend(to int, tag kx.Tag, bufs [][]byte) (h Header, n int, done bool, err error) {
	if t.closing.Load() {
		return h, 0, false, t.closedErr()
	}
	if n, err = kx.CheckSend(to, t.size, bufs); err != nil {
		return h, 0, false, err
	}
	if to == t.rank {
		t.count(to, n, true)
		t.count(to, n, false)
		t.mb.Put(t.rank, tag, bufs, n)
		return h, n, true, nil
	}
	if err := t.mb.Dead(to); err != nil {
		return h, 0, false, err
	}
	h = Header{Type: FrameData, Layer: tag.Layer, Phase: phaseByte(tag), Job: t.job, Seq: tag.Seq,
		FP: tag.FP, Src: t.rank, Len: uint64(n)}
	return h, n, false, nil
}

// count counts a data message with rank r. Receives from a peer are counted under its read
// token, one reader at a time: relaxed. Sends to a peer run side by side, and so do self-sends.
func (t *TCP) count(r, n int, sent bool) { t.stats[r].Count(n, sent, !sent && r != t.rank) }

// Abort fails collective seq here and sends an abort frame to every live peer, all at once; it
// returns within Timeout() whatever the peers do. When seq already failed through a peer's
// abort, that peer has told everyone and nothing is sent.
func (t *TCP) Abort(seq uint64, err error) {
	code, named, msg := kx.AbortReason(err)
	t.mb.Abort(seq, -1, code, named, msg)
	if t.closing.Load() || t.mb.AbortedByPeer(seq) {
		return
	}
	payload := encodeAbort(code, named, msg)
	_, fp := t.mb.Current()
	deadline := time.Now().Add(t.timeout)
	var wg sync.WaitGroup
	for _, p := range t.peers {
		if p == nil || t.mb.Dead(p.rank) != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := Header{Type: FrameAbort, Job: t.job, Seq: seq, FP: fp, Src: t.rank, Len: uint64(len(payload))}
			p.write(&h, [][]byte{payload}, deadline) // best effort: a failure marks the peer dead
		}()
	}
	wg.Wait()
}

// Close says bye to every live peer, closes the connections and waits for the readers.
func (t *TCP) Close() error {
	t.closeOnce.Do(func() {
		owed := time.Now().Add(t.timeout)
		for _, p := range t.peers {
			if p != nil {
				p.waitLate(owed) // frames this rank still owes a slow replica
			}
		}
		deadline := time.Now().Add(min(t.timeout, time.Second))
		relayH, relay := t.relayedAbort()
		t.closing.Store(true)
		t.interruptSelfRead()
		close(t.done)
		var wg sync.WaitGroup
		for _, p := range t.peers {
			if p == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if t.mb.Dead(p.rank) == nil && p.lock(deadline) {
					if p.writable() == nil {
						if relay != nil {
							p.data.write(relayH, [][]byte{relay}, deadline)
						}
						p.data.sayBye(deadline) // a ring's, before the TCP bye: the peer's ring reader ends on it
					}
					var hb [HeaderSize]byte
					EncodeHeader(hb[:], &Header{Type: FrameBye, Job: t.job, Src: t.rank})
					p.conn.SetWriteDeadline(deadline)
					_, err := p.conn.Write(hb[:])
					p.unlock()
					if err == nil {
						p.lingerForBye(deadline)
					}
				}
				p.conn.Close()
				p.data.close()
			}()
		}
		wg.Wait()
		t.mb.Close(t.closedErr())
		t.Set.Close() // after the mailbox: a lane wait in flight ends on its close
		t.wg.Wait()
		t.stopSelfRead()
	})
	return nil
}

// relayedAbort is the abort a peer failed this rank's current collective with, passed on ahead
// of this rank's bye on the same link: its sender's frame travels on another link, and a rank
// still waiting here could read the bye first ("rank r has finalized") and miss the cause.
func (t *TCP) relayedAbort() (h Header, payload []byte) {
	seq, fp := t.mb.Current()
	if err := t.mb.PeerAbort(seq); err != nil {
		payload = encodeAbort(kx.AbortReason(err))
		h = Header{Type: FrameAbort, Job: t.job, Seq: seq, FP: fp, Src: t.rank, Len: uint64(len(payload))}
	}
	return h, payload
}

// lingerForBye half-closes the connection after this rank's bye and lets the reader go on
// until the peer's own bye or end of stream (or the deadline). Closing a socket whose receive
// queue still holds unread bytes (a racing copy this rank no longer needs, say) sends a reset,
// and a reset makes the peer drop what it has received and not yet read: a replica that
// finished first could so take from a slower one the last copies it was owed (a flake of
// TestReplicationSurvivesDeadReplicas; measured in docs/netio-notes.md).
func (p *peer) lingerForBye(deadline time.Time) {
	if hc, ok := p.conn.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	}
	tm := time.NewTimer(time.Until(deadline))
	defer tm.Stop()
	select {
	case <-p.readDone:
	case <-tm.C:
	}
}

// lock takes p's write lock, waiting until deadline at most (zero: the transport's timeout
// from when it starts to wait).
func (p *peer) lock(deadline time.Time) bool {
	if p.w.TryLock() {
		return true
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(p.t.timeout)
	}
	return p.w.LockUntil(deadline)
}

func (p *peer) unlock() { p.w.Unlock() }

// write sends one frame. With a zero hard deadline each chunk may take up to the timeout (Send);
// otherwise everything must be done by hard (Abort). A failed write leaves half a frame on the
// stream, so the connection is dropped and the peer counted as lost.
func (p *peer) write(h *Header, bufs [][]byte, hard time.Time) error {
	end, err := p.post(h, bufs, hard)
	if err == nil && end != 0 {
		err = p.awaitRefCopied(h, end)
	}
	// The peer reads bufs by address until then: the collector must not free them before
	// (nothing else here holds them).
	runtime.KeepAlive(bufs)
	return err
}

// post is write without the wait for the peer's copy of a frame sent by reference: it returns
// the ring position the peer releases once it has copied the payload (awaitRefCopied), or 0
// for a frame written whole.
func (p *peer) post(h *Header, bufs [][]byte, hard time.Time) (end uint64, err error) {
	t := p.t
	if !p.lock(hard) {
		return 0, kx.Errorf(kx.CodeTimeout, "send to rank %d: its connection stayed busy for %v", kx.RankRef(p.rank), t.timeout)
	}
	if err := p.writable(); err != nil {
		p.unlock()
		return 0, err
	}
	l := p.ring()
	if l == nil || h.Type != FrameData || !l.byRef(h.Len) {
		err := p.data.write(*h, bufs, hard)
		p.unlock()
		return 0, err
	}
	// By reference (shmref_linux.go): the write lock goes back before the wait for the peer's
	// copy, so that this rank's other frames to it (and its own answers) are not held up.
	end, err = p.writeShmRef(h, bufs, hard)
	p.unlock()
	return end, err
}

// writable is nil when frames may be written to p (the caller holds the write lock).
func (p *peer) writable() error {
	if err := p.t.mb.Dead(p.rank); err != nil {
		return err
	}
	if e := p.werr.Load(); e != nil {
		return *e
	}
	return nil
}

// DropPeer closes the link to rank, which a resize left out of the comm that goes on over this
// transport (core/members: dropLeftOut): its connection and shared-memory segment are released
// now, not when its process exits, and its waits on this rank fail at once.
func (t *TCP) DropPeer(rank int) {
	if rank < 0 || rank >= t.size || rank == t.rank {
		return
	}
	if p := t.peers[rank]; p != nil {
		p.down(kx.Errorf(kx.CodePeer, "rank %d was left out of the resized comm", kx.RankRef(rank)))
	}
}

// down drops the connection and tells the mailbox why the peer is gone.
func (p *peer) down(err error) {
	p.downOnce.Do(func() {
		p.t.mb.MarkDead(p.rank, err)
		p.conn.Close()
		p.data.close() // a ring's ends its reader and any write waiting for room
	})
}

// checkFrame decodes a frame header from p and checks it belongs to p and this job; a bad one
// drops p. payload, unless negative, is the payload length the carrier (a ring frame) holds.
func (t *TCP) checkFrame(p *peer, hb []byte, payload int) (Header, bool) {
	h, err := DecodeHeader(hb, MaxPayload)
	if err == nil && payload >= 0 && h.Len != uint64(payload) {
		err = fmt.Errorf("header says %d payload bytes, its ring frame holds %d", h.Len, payload)
	}
	switch {
	case err != nil:
		p.down(kx.Errorf(kx.CodeOf(err), "rank %d sent a bad frame: %v", kx.RankRef(p.rank), err))
	case h.Job != t.job:
		p.down(kx.Errorf(kx.CodeAuth, "rank %d sent a frame of job %016x, this job is %016x", kx.RankRef(p.rank), h.Job, t.job))
	case h.Src != p.rank:
		p.down(kx.Errorf(kx.CodeNet, "rank %d sent a frame claiming to come from rank %d", kx.RankRef(p.rank), kx.RankRef(h.Src)))
	default:
		return h, true
	}
	return h, false
}

// file hands one frame from p to the mailbox, its payload read from r (the socket's buffered
// reader, or a ring's current frame). It reports a bye, and a read error for the caller's
// reader to judge (errDropped: p was dropped for a bad frame already).
func (t *TCP) file(p *peer, h *Header, r mailbox.Payload) (bye bool, err error) {
	switch h.Type {
	case FrameHeartbeat:
		t.mb.Heartbeat(p.rank, h.Seq)
	case FrameData:
		// Counted before the hand-over: a caller woken by it may reset the statistics at once.
		t.count(p.rank, int(h.Len), false)
		if err := t.mb.Receive(p.rank, h.tag(), int(h.Len), r); err != nil {
			return false, err
		}
	case FrameAbort:
		if h.Len > maxAbortPayload {
			p.down(kx.Errorf(kx.CodeNet, "rank %d sent an abort frame of %d bytes", kx.RankRef(p.rank), h.Len))
			return false, errDropped
		}
		b := make([]byte, h.Len)
		if _, err := io.ReadFull(r, b); err != nil {
			return false, err
		}
		code, named, msg := decodeAbort(b)
		t.mb.Abort(h.Seq, p.rank, code, named, msg)
	case FrameDataRef:
		return false, t.receiveRef(p, h, r)
	case FrameBye:
		return true, nil
	}
	return false, nil
}

var _ kx.Transport = (*TCP)(nil)
