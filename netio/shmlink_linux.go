//go:build linux

package netio

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"kylix/netio/shm"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Shared memory between two ranks of one host (shm=auto). The TCP
// connection stays: it was authenticated by the handshake, it carries the heartbeats
// (liveness.go judges a stopped peer exactly as over TCP), and it is the channel on which
// the pair agrees, after the handshake, whether to use a segment:
//
//  1. both write a shmHello (host identity, uid, pid, a fresh nonce) and read the other's;
//     a pair of another host, namespace or user stops here and stays on TCP;
//  2. the lower rank (the acceptor) creates the segment, listens on an abstract unix socket
//     named from the job, both ranks and its nonce, and writes 'R' (or 'N': TCP);
//  3. the higher rank connects and writes a token only the TCP peer can know (a hash of
//     both nonces); both check the other end's SO_PEERCRED against the pid and uid of its
//     shmHello, so the unix socket is bound to the authenticated TCP connection;
//  4. the memfd and its four doorbells (eventfds, netio/shm/doorbell.go) go over the unix socket; the higher rank maps it, checks the creator's pid
//     in it and acks; the lower rank checks the attacher's pid in it and writes the verdict,
//     'Y' or 'N', on TCP, which both then follow, so they never disagree.
//
// Any failure at 2-4 falls back to TCP for the pair (logged at debug); a broken TCP
// connection fails the handshake as before. The memfd is unlinked from birth, and the
// creator drops its fd once the peer has it: a kill -9 of either side leaves nothing.
//
// Data, abort and bye frames then go through the ring (header and payload as one ring frame,
// written from the caller's buffers): the ring is the peer's data link (link.go), read and
// filed as a socket is, its payloads read through ringPayload.

// shmRing is each direction's ring: BENCH.md in netio/shm measured 256 KiB as the fastest
// for 1 MiB frames, and a larger frame streams through it.
const shmRing = 256 << 10

// shmSpin is how long a wait on a ring spins before it sleeps, where cores allow it (a
// variable for tests). Zero: each rank's ring reader hands its frames to another goroutine, so
// a rank needs two threads and a spinning reader starves the very goroutine it waits for
// (docs/netio-notes.md, "Waits"); the waiting thread spins instead (selfread_linux.go).
var shmSpin time.Duration

// shmStep bounds the unix-socket part of the set-up: on one host it either works at once or
// fails at once, and a rank waiting for a peer that gave up must not hold the mesh longer.
const shmStep = 5 * time.Second

const shmHelloSize = 80

var shmMagic = [4]byte{'K', 'Y', 'S', 'M'}

// shmHello is what a rank says of itself on the TCP connection after the handshake.
type shmHello struct {
	host  [32]byte // hostIdentity
	uid   uint32
	pid   uint32
	nonce [32]byte
}

func (h *shmHello) encode() []byte {
	b := make([]byte, shmHelloSize)
	copy(b, shmMagic[:])
	b[4] = 1 // version
	copy(b[8:40], h.host[:])
	binary.LittleEndian.PutUint32(b[40:], h.uid)
	binary.LittleEndian.PutUint32(b[44:], h.pid)
	copy(b[48:80], h.nonce[:])
	return b
}

func decodeShmHello(b []byte) (shmHello, error) {
	var h shmHello
	if [4]byte(b[:4]) != shmMagic || b[4] != 1 {
		return h, errors.New("not a shared-memory hello")
	}
	copy(h.host[:], b[8:40])
	h.uid = binary.LittleEndian.Uint32(b[40:])
	h.pid = binary.LittleEndian.Uint32(b[44:])
	copy(h.nonce[:], b[48:80])
	return h, nil
}

var (
	hostOnce sync.Once
	hostID   [32]byte
	hostOK   bool
)

// hostIdentity names the place where a memfd, a pid and an abstract unix socket mean the
// same on both sides: the boot (boot_id), the network namespace (abstract sockets live
// there), the pid namespace (pids in the segment and in SO_PEERCRED) and the hostname.
// ok is false when it cannot be told: the rank then never offers a match.
func hostIdentity() ([32]byte, bool) {
	hostOnce.Do(func() {
		boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			return
		}
		netns, err1 := os.Readlink("/proc/self/ns/net")
		pidns, err2 := os.Readlink("/proc/self/ns/pid")
		if err1 != nil || err2 != nil {
			return
		}
		name, _ := os.Hostname()
		hostID = sha256.Sum256([]byte("kylix-host-v1\x00" + string(bytes.TrimSpace(boot)) + "\x00" + netns + "\x00" + pidns + "\x00" + name))
		hostOK = true
	})
	return hostID, hostOK
}

// shmMatch decides from the two hellos whether a pair may share memory: the same host
// identity and the same user (a segment of another user's process is not ours to map,
// and SO_PEERCRED would refuse it anyway). sameHost tells the host part alone, for counting
// the ranks that compete for this host's CPUs.
func shmMatch(me, them shmHello) (ok, sameHost bool, why string) {
	var zero [32]byte
	switch {
	case me.host == zero || them.host != me.host:
		return false, false, "another host or namespace"
	case them.uid != me.uid:
		return false, true, fmt.Sprintf("another user (uid %d, this rank's %d)", them.uid, me.uid)
	}
	return true, true, ""
}

func myShmHello() (shmHello, error) {
	h := shmHello{uid: uint32(os.Getuid()), pid: uint32(os.Getpid())}
	h.host, _ = hostIdentity()
	_, err := rand.Read(h.nonce[:])
	return h, err
}

// shmToken proves on the unix socket that the connecting process read both hellos of the
// authenticated TCP connection.
func shmToken(creator, attacher *shmHello) []byte {
	sum := sha256.Sum256(append(append([]byte("kylix-shm-attach-v1\x00"), creator.nonce[:]...), attacher.nonce[:]...))
	return sum[:]
}

func shmSocketName(job uint64, lower, higher int, nonce *[32]byte) string {
	return fmt.Sprintf("@kylix-shm-%016x-%d-%d-%x", job, lower, higher, nonce[:8])
}

// ringLink is a pair's segment as the transport holds it: the peer's data link.
type ringLink struct {
	linkRead
	p       *peer // set when the transport starts
	seg     *shm.Segment
	tcpGone chan struct{} // closed when the TCP reader ended without a bye: the ring reader stops once it drained
	gone    sync.Once

	// guarded by the peer's write lock
	hdr   [HeaderSize]byte
	parts [][]byte // WriteFrame's argument

	// The read side, guarded by the read token.
	pl     *ringPayload // the current frame's payload as a mailbox.Payload
	rdesc  []byte       // a reference frame's list as read (shmref_linux.go)
	refs   []memRef     // ... parsed
	ref    refPayload   // ... as the mailbox reads it
	refsIn uint64       // reference frames read so far (their number, for write-back)
	// For the stats: reference frames read, and bytes written back (refPayload.WriteBack).
	refsRead, wroteBack atomic.Uint64

	desc     []byte        // the reference list being written; guarded by the peer's write lock
	refsSent atomic.Uint64 // frames sent by reference (tests)
}

func newRingLink(seg *shm.Segment) *ringLink {
	l := &ringLink{seg: seg, tcpGone: make(chan struct{})}
	l.pl = &ringPayload{r: seg.Reader(), w: shm.Wait{Abort: l.tcpGone}}
	return l
}

func (l *ringLink) rd() *linkRead     { return &l.linkRead }
func (l *ringLink) close()            { l.seg.Close() }
func (l *ringLink) kind() string      { return "shared-memory ring" }
func (l *ringLink) closeWrite()       {} // a frame cut short already leaves the ring unusable
func (l *ringLink) hidden() bool      { return false }
func (l *ringLink) setDirect(bool)    {}
func (l *ringLink) pending() bool     { return l.seg.Reader().Ready() }
func (l *ringLink) awaitFrame() error { return l.seg.AwaitFrame(l.pl.w) }
func (l *ringLink) share() bool       { l.shared = l.seg.SetShared() == nil; return l.shared }

// buffered is pending, or the TCP connection's end, which the next read reports once the ring
// is drained.
func (l *ringLink) buffered() bool { return l.pending() || l.tcpEnded() }

func (l *ringLink) next(hb []byte) (mailbox.Payload, int, error) {
	r := l.seg.Reader()
	n, err := r.Next(l.pl.w)
	if err != nil {
		return nil, 0, err
	}
	if n < HeaderSize {
		l.p.down(kx.Errorf(kx.CodeNet, "rank %d sent a ring frame of %d bytes", kx.RankRef(l.p.rank), n))
		return nil, 0, errDropped
	}
	if err := r.ReadFull(l.pl.w, hb); err != nil {
		return nil, 0, err
	}
	return l.pl, n - HeaderSize, nil
}

func (l *ringLink) ended(err error) string {
	switch {
	case errors.Is(err, shm.ErrPeerDead):
		return "its process died (its shared-memory ring was abandoned)"
	case errors.Is(err, shm.ErrAborted):
		return "connection closed without a bye (process died?)"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, shm.ErrPeerClosed):
		return "shared memory closed without a bye (process died?)"
	}
	return err.Error()
}

// shmOffered tells whether this rank offers shared memory at the handshake.
func shmOffered(o kx.Options) bool {
	_, ok := hostIdentity()
	return o.Shm != "off" && shm.Supported && ok
}

// negotiateShm runs the exchange above on c, right after its handshake. An error is a TCP
// I/O error (the connection is unusable, as a failed handshake); every other failure
// returns a pair without link.
func negotiateShm(c net.Conn, creator bool, rank, peer int, job uint64, deadline time.Time, debug func(string, ...any)) (shmPair, error) {
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	me, err := myShmHello()
	if err != nil {
		return shmPair{}, err
	}
	if _, err := c.Write(me.encode()); err != nil {
		return shmPair{}, err
	}
	buf := make([]byte, shmHelloSize)
	if _, err := io.ReadFull(c, buf); err != nil {
		return shmPair{}, err
	}
	them, err := decodeShmHello(buf)
	if err != nil {
		return shmPair{}, err
	}
	ok, same, why := shmMatch(me, them)
	if !ok {
		debug("rank %d stays on TCP: %s", peer, why)
		return shmPair{sameHost: same}, nil
	}
	step := time.Now().Add(shmStep)
	if deadline.Before(step) {
		step = deadline
	}
	var link *ringLink
	if creator {
		link, err = shmCreate(c, rank, peer, job, &me, &them, step)
	} else {
		link, err = shmAttach(c, rank, peer, job, &me, &them, step)
	}
	if err != nil {
		var fb *shmFallback
		if errors.As(err, &fb) {
			debug("rank %d stays on TCP: shared memory failed: %v", peer, fb.err)
			return shmPair{sameHost: true}, nil
		}
		return shmPair{}, err
	}
	debug("rank %d talks through shared memory", peer)
	return shmPair{link: link, sameHost: true}, nil
}

// shmFallback wraps a failure that sends the pair back to TCP.
type shmFallback struct{ err error }

func (e *shmFallback) Error() string { return e.err.Error() }

func writeByte(c net.Conn, b byte) error { _, err := c.Write([]byte{b}); return err }

func readByte(c io.Reader) (byte, error) {
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	return b[0], err
}

func shmCreate(c net.Conn, rank, peer int, job uint64, me, them *shmHello, step time.Time) (*ringLink, error) {
	fail := func(err error) (*ringLink, error) {
		if werr := writeByte(c, 'N'); werr != nil {
			return nil, werr
		}
		return nil, &shmFallback{err}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: shmSocketName(job, rank, peer, &me.nonce), Net: "unix"})
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	seg, err := shm.Create(shmRing, shm.Options{})
	if err != nil {
		return fail(err)
	}
	bells, err := seg.AddDoorbells() // sleeps park the goroutine in the poller (shm/doorbell.go)
	if err != nil {
		seg.Close()
		return fail(err)
	}
	if err := writeByte(c, 'R'); err != nil {
		seg.Close()
		return nil, err
	}
	err = func() error {
		ln.SetDeadline(step)
		uc, err := ln.AcceptUnix()
		if err != nil {
			return err
		}
		defer uc.Close()
		uc.SetDeadline(step)
		if err := checkPeerCred(uc, them); err != nil {
			return err
		}
		tok := make([]byte, sha256.Size)
		if _, err := io.ReadFull(uc, tok); err != nil {
			return err
		}
		if !bytes.Equal(tok, shmToken(me, them)) {
			return errors.New("the unix socket's peer does not know the TCP connection's nonces")
		}
		if err := shm.SendFDs(uc, append([]int{seg.Fd()}, bells...)...); err != nil {
			return err
		}
		if ack, err := readByte(uc); err != nil || ack != 'A' {
			return fmt.Errorf("no ack after the segment was sent (%q, %v)", ack, err)
		}
		if seg.PeerPid() != int(them.pid) {
			return fmt.Errorf("segment attached by pid %d, the peer is pid %d", seg.PeerPid(), them.pid)
		}
		seg.ProbePeerMemory() // before the verdict: the attacher's frames may go by reference after it
		return nil
	}()
	seg.CloseFD() // mapped by both (or failed): the segment now lives only in the mappings
	if err != nil {
		seg.Close()
		return fail(err)
	}
	if err := writeByte(c, 'Y'); err != nil {
		seg.Close()
		return nil, err
	}
	return newRingLink(seg), nil
}

func shmAttach(c net.Conn, rank, peer int, job uint64, me, them *shmHello, step time.Time) (*ringLink, error) {
	ready, err := readByte(c)
	if err != nil {
		return nil, err
	}
	if ready != 'R' {
		return nil, &shmFallback{errors.New("the peer could not create a segment")}
	}
	seg, aerr := func() (*shm.Segment, error) {
		d := net.Dialer{Deadline: step}
		nc, err := d.Dial("unix", shmSocketName(job, peer, rank, &them.nonce))
		if err != nil {
			return nil, err
		}
		uc := nc.(*net.UnixConn)
		defer uc.Close()
		uc.SetDeadline(step)
		if err := checkPeerCred(uc, them); err != nil {
			return nil, err
		}
		if _, err := uc.Write(shmToken(them, me)); err != nil {
			return nil, err
		}
		fds, err := shm.RecvFDs(uc, 5)
		if err != nil {
			return nil, err
		}
		seg, err := shm.Open(fds[0], shm.Options{})
		if err != nil {
			for _, fd := range fds[1:] {
				unix.Close(fd)
			}
			return nil, err
		}
		if err := seg.UseDoorbells(fds[1:]); err != nil {
			seg.Close()
			return nil, err
		}
		if seg.PeerPid() != int(them.pid) {
			seg.Close()
			return nil, fmt.Errorf("segment made by pid %d, the peer is pid %d", seg.PeerPid(), them.pid)
		}
		seg.ProbePeerMemory() // before the ack: the creator's frames may go by reference after it
		if _, err := uc.Write([]byte{'A'}); err != nil {
			seg.Close()
			return nil, err
		}
		return seg, nil
	}()
	// The creator's verdict decides, so that both sides always agree; after a failure here
	// it is 'N' (it sees the unix socket close without an ack).
	verdict, err := readByte(c)
	if err != nil {
		if seg != nil {
			seg.Close()
		}
		return nil, err
	}
	if verdict != 'Y' || seg == nil {
		if seg != nil {
			seg.Close()
		}
		if aerr == nil {
			aerr = errors.New("the peer refused the attached segment")
		}
		return nil, &shmFallback{aerr}
	}
	return newRingLink(seg), nil
}

// checkPeerCred binds the unix socket to the TCP peer: its process must be the pid and uid
// that peer announced.
func checkPeerCred(uc *net.UnixConn, them *shmHello) error {
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return cerr
	}
	if cred.Pid != int32(them.pid) || cred.Uid != them.uid {
		return fmt.Errorf("unix socket peer is pid %d uid %d, the TCP peer announced pid %d uid %d", cred.Pid, cred.Uid, them.pid, them.uid)
	}
	return nil
}

// setSpin sets every link's spin once the mesh is up (before any call on the segments).
func setSpin(links []*ringLink, spin bool) {
	var d time.Duration
	if spin {
		d = shmSpin
	}
	for _, l := range links {
		if l != nil {
			l.seg.SetSpin(d)
		}
	}
}

// write writes one frame through the ring; the caller holds the write lock. hard bounds the
// whole frame, or (zero) the transport's timeout from when it first waits for room (a peer that
// stops reading is declared dead by liveness first).
func (l *ringLink) write(h *Header, bufs [][]byte, hard time.Time) error {
	EncodeHeader(l.hdr[:], h)
	l.parts = append(append(l.parts[:0], l.hdr[:]), bufs...)
	err := l.seg.Writer().WriteFrame(shm.Wait{Deadline: hard, Timeout: l.p.t.timeout}, l.parts...)
	clear(l.parts) // drop references to the caller's memory
	l.parts = l.parts[:0]
	if err != nil {
		return l.p.writeFailed(h, err)
	}
	return nil
}

// writeRaw writes an encoded frame (the late queue's) as one ring frame.
func (l *ringLink) writeRaw(b []byte) error {
	err := l.seg.Writer().WriteFrame(shm.Wait{Deadline: time.Now().Add(l.p.t.timeout)}, b)
	if err != nil {
		var h Header
		if len(b) >= HeaderSize {
			h, _ = DecodeHeader(b, MaxPayload)
		}
		return l.p.writeFailed(&h, err)
	}
	return nil
}

// fits tells whether a frame of n payload bytes goes into the ring without waiting.
func (l *ringLink) fits(n int) bool { return l.seg.Writer().Fits(HeaderSize + n) }

// sendOrLeave is SendOrLeave through a ring. A ring write is a copy that waits only when the
// ring is full, so a frame that fits is written at once; one that does not goes whole to the
// late queue (a frame is never cut: the ring carries frames, not a byte stream).
func (l *ringLink) sendOrLeave(h *Header, bufs [][]byte, n int, leave <-chan struct{}) error {
	p := l.p
	d := &detacher{}
	if leave == nil {
		d.lagBy = time.Now().Add(smallLag)
	}
	if !p.lockOrLeave(d, leave) {
		return p.enqueue(frameBytes(h, bufs, n), false, n)
	}
	if err := p.writable(); err != nil {
		p.unlock()
		return err
	}
	if !l.fits(n) {
		return p.enqueue(frameBytes(h, bufs, n), true, n) // the drain goroutine takes over the write lock
	}
	err := l.write(h, bufs, time.Time{}) // the timeout from when it has to wait
	p.unlock()
	if err == nil {
		p.t.count(p.rank, n, true)
	}
	return err
}

// ringPayload is mailbox.Payload over the current frame of a ring: Receive reads the payload
// straight from shared memory into its posted place.
type ringPayload struct {
	r *shm.Reader
	w shm.Wait
}

func (rp *ringPayload) Read(b []byte) (int, error) {
	n := min(len(b), rp.r.Remaining())
	if n == 0 && len(b) > 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if err := rp.r.ReadFull(rp.w, b[:n]); err != nil {
		return 0, err
	}
	return n, nil
}

func (rp *ringPayload) Discard(n int) (int, error) {
	if err := rp.r.Discard(rp.w, n); err != nil {
		return 0, err
	}
	return n, nil
}

// tcpEnded tells whether the TCP connection ended without a bye (tcpGone is closed).
func (l *ringLink) tcpEnded() bool {
	select {
	case <-l.tcpGone:
		return true
	default:
		return false
	}
}

// endTCP is the TCP reader's end for a peer on shared memory: the ring reader decides what
// it means, after draining what the peer published (a bye there, or a death).
func (l *ringLink) endTCP(bye bool) {
	if bye {
		return
	}
	l.gone.Do(func() {
		close(l.tcpGone)
		l.seg.Interrupt()
	})
}

// sayBye writes a bye into the ring (the caller holds the write lock) and closes this side:
// the peer reads everything sent before it, then the bye.
func (l *ringLink) sayBye(deadline time.Time) {
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameBye, Job: l.p.t.job, Src: l.p.t.rank})
	l.seg.Writer().WriteFrame(shm.Wait{Deadline: deadline}, hb[:])
	l.seg.Close()
}

// ShmStats sums the waits on this rank's rings (netio/shm Stats): Spins stays 0 where the
// host's ranks outnumber its CPUs.
func (t *TCP) ShmStats() ShmStats {
	var s ShmStats
	for _, p := range t.peers {
		if p == nil || p.ring() == nil {
			continue
		}
		l := p.ring()
		st := l.seg.Stats()
		s.Peers++
		s.Spins += st.Spins
		s.SpinHits += st.SpinHits
		s.Sleeps += st.Sleeps
		s.WakesSent += st.WakesSent
		s.RefFrames += l.refsRead.Load()
		s.WrittenBack += l.wroteBack.Load()
	}
	// Waits that read their rings on their own thread (selfread_linux.go) spin and sleep there.
	s.Spins += t.sr.spins.Load()
	s.SpinHits += t.sr.spinHits.Load()
	s.Sleeps += t.sr.sleeps.Load()
	s.Yields += t.sr.yields.Load()
	s.RanksOnHost = t.ranksOnHost
	s.SpinAllowed = t.spin
	return s
}
