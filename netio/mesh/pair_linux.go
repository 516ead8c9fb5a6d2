//go:build linux

package mesh

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/netio/shm"
	"net"
	"os"
	"sync"
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
// The ring is then the pair's data link in netio (shmlink_linux.go).

// ringSize is each direction's ring: BENCH.md in netio/shm measured 256 KiB as the fastest
// for 1 MiB frames, and a larger frame streams through it.
const ringSize = 256 << 10

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

// ShmOffered tells whether this rank offers shared memory at the handshake.
func ShmOffered(o kx.Options) bool {
	_, ok := hostIdentity()
	return o.Shm != "off" && shm.Supported && ok
}

// negotiateShm runs the exchange above on c, right after its handshake. An error is a TCP
// I/O error (the connection is unusable, as a failed handshake); every other failure
// returns a pair without link.
func negotiateShm(c net.Conn, creator bool, rank, peer int, job uint64, deadline time.Time, debug func(string, ...any)) (Pair, error) {
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	me, err := myShmHello()
	if err != nil {
		return Pair{}, err
	}
	if _, err := c.Write(me.encode()); err != nil {
		return Pair{}, err
	}
	buf := make([]byte, shmHelloSize)
	if _, err := io.ReadFull(c, buf); err != nil {
		return Pair{}, err
	}
	them, err := decodeShmHello(buf)
	if err != nil {
		return Pair{}, err
	}
	ok, same, why := shmMatch(me, them)
	if !ok {
		debug("rank %d stays on TCP: %s", peer, why)
		return Pair{SameHost: same}, nil
	}
	step := time.Now().Add(shmStep)
	if deadline.Before(step) {
		step = deadline
	}
	var seg *shm.Segment
	if creator {
		seg, err = shmCreate(c, rank, peer, job, &me, &them, step)
	} else {
		seg, err = shmAttach(c, rank, peer, job, &me, &them, step)
	}
	if err != nil {
		var fb *shmFallback
		if errors.As(err, &fb) {
			debug("rank %d stays on TCP: shared memory failed: %v", peer, fb.err)
			return Pair{SameHost: true}, nil
		}
		return Pair{}, err
	}
	debug("rank %d talks through shared memory", peer)
	return Pair{Seg: seg, SameHost: true}, nil
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

func shmCreate(c net.Conn, rank, peer int, job uint64, me, them *shmHello, step time.Time) (*shm.Segment, error) {
	fail := func(err error) (*shm.Segment, error) {
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
	seg, err := shm.Create(ringSize, shm.Options{})
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
		// The attacher pinned this process in shm.Open; pin it now too, so that the pair
		// holds all its descriptors from here on.
		if seg.PinPeer() {
			return fmt.Errorf("the peer (pid %d) exited after it attached", them.pid)
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
	return seg, nil
}

func shmAttach(c net.Conn, rank, peer int, job uint64, me, them *shmHello, step time.Time) (*shm.Segment, error) {
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
	return seg, nil
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
