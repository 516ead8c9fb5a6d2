package mesh

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"kylix/core/kx"
	"net"
	"os"
	"time"
)

// The handshake opens every connection before any frame. Both sides send a hello at once:
//
//	0  4  magic "KYLH"
//	4  1  protocol version
//	5  1  flags: helloShm = this rank offers shared memory (shm=auto); 0 from older ranks
//	6  2  zero
//	8  8  job id
//	16 4  rank
//	20 4  size
//	24 32 random nonce
//
// then each proves the job secret with HMAC-SHA256(secret, label | dialer nonce | acceptor
// nonce | dialer job | acceptor job | dialer rank | acceptor rank), the label naming the
// direction so a proof cannot be reflected back. The secret itself never travels. Job ids and
// ranks are checked only after the proofs, so a wrong secret is reported as such.
const helloSize = 56

// ProtocolVersion is bumped on any incompatible change of frames, handshake or config messages
// (3: layer-0 rows; 4: compressed rows in set order); both the hello and every frame carry it.
const ProtocolVersion = 4

var helloMagic = [4]byte{'K', 'Y', 'L', 'H'}

// helloShm in a hello's flags: the rank would exchange through shared memory with a peer
// of its host (shmlink_linux.go), which is negotiated on the connection after the handshake
// only when both ranks set it, so ranks with shm=off see the wire of before.
const helloShm = 1

type hello struct {
	version uint8
	flags   uint8
	job     uint64
	rank    int
	size    int
	nonce   [32]byte
}

func (h *hello) encode() []byte {
	b := make([]byte, helloSize)
	copy(b, helloMagic[:])
	b[4] = h.version
	b[5] = h.flags
	binary.LittleEndian.PutUint64(b[8:], h.job)
	binary.LittleEndian.PutUint32(b[16:], uint32(h.rank))
	binary.LittleEndian.PutUint32(b[20:], uint32(h.size))
	copy(b[24:], h.nonce[:])
	return b
}

func decodeHello(b []byte) (hello, error) {
	if [4]byte(b[0:4]) != helloMagic {
		return hello{}, errors.New("bad magic")
	}
	h := hello{version: b[4], flags: b[5], job: binary.LittleEndian.Uint64(b[8:]),
		rank: int(int32(binary.LittleEndian.Uint32(b[16:]))), size: int(int32(binary.LittleEndian.Uint32(b[20:])))}
	copy(h.nonce[:], b[24:])
	return h, nil
}

func handshakeProof(secret, label string, dialer, acceptor *hello) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	var b [8]byte
	mac.Write([]byte("kylix-handshake-v1\x00" + label + "\x00"))
	mac.Write(dialer.nonce[:])
	mac.Write(acceptor.nonce[:])
	binary.LittleEndian.PutUint64(b[:], dialer.job)
	mac.Write(b[:])
	binary.LittleEndian.PutUint64(b[:], acceptor.job)
	mac.Write(b[:])
	binary.LittleEndian.PutUint32(b[:4], uint32(dialer.rank))
	mac.Write(b[:4])
	binary.LittleEndian.PutUint32(b[:4], uint32(acceptor.rank))
	mac.Write(b[:4])
	return mac.Sum(nil)
}

// handshake runs the exchange on c. The dialer knows whom it called (peer); the acceptor learns
// the peer's rank from its hello and returns it. Every read and write is bounded by timeout.
// Errors: CodeAuth (version, secret, job, rank) naming the peer, which fails the job; an
// *hsError for I/O trouble or a peer that does not speak the protocol, which a dialer retries and
// an acceptor drops. flags go in this rank's hello; the peer's come back in theirs.
func handshake(c net.Conn, dial bool, rank, size, peer int, job uint64, secret string, timeout time.Duration, flags uint8) (int, uint8, error) {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	me := hello{version: ProtocolVersion, flags: flags, job: job, rank: rank, size: size}
	if _, err := rand.Read(me.nonce[:]); err != nil {
		return -1, 0, kx.Errorf(kx.CodeInternal, "handshake: no randomness: %v", err)
	}
	who := "a peer"
	if dial {
		who = rankName(peer)
	}
	if _, err := c.Write(me.encode()); err != nil {
		return -1, 0, hsIOError(who, c, err)
	}
	buf := make([]byte, helloSize)
	if _, err := io.ReadFull(c, buf); err != nil {
		return -1, 0, hsIOError(who, c, err)
	}
	them, err := decodeHello(buf)
	if err != nil {
		return -1, 0, &hsError{kx.Errorf(kx.CodeNet, "handshake: %s at %s is not a kylix rank", who, c.RemoteAddr()), true}
	}
	if !dial {
		who = rankName(them.rank)
	}
	if them.version != ProtocolVersion {
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: it speaks protocol version %d, this rank (%d) speaks %d (mixed kylix versions?)",
			who, them.version, rank, ProtocolVersion)
	}
	d, a, myLabel, theirLabel := &me, &them, "dialer", "acceptor"
	if !dial {
		d, a, myLabel, theirLabel = &them, &me, "acceptor", "dialer"
	}
	if _, err := c.Write(handshakeProof(secret, myLabel, d, a)); err != nil {
		return -1, 0, hsIOError(who, c, err)
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, got); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The peer hung up after our proof: it judged our secret wrong (or the job).
			return -1, 0, kx.Errorf(kx.CodeAuth, "%s refused the handshake (wrong secret or job?)", who)
		}
		return -1, 0, hsIOError(who, c, err)
	}
	if !hmac.Equal(got, handshakeProof(secret, theirLabel, d, a)) {
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: wrong secret", who)
	}
	switch {
	case them.job != job:
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: it belongs to job %016x, this rank to job %016x (different peers list?)",
			who, them.job, job)
	case them.size != size:
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: it has size=%d, this rank size=%d", who, them.size, size)
	case dial && them.rank != peer:
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: the process there is rank %d", who, them.rank)
	case !dial && (them.rank <= rank || them.rank >= size):
		return -1, 0, kx.Errorf(kx.CodeAuth, "%s failed the handshake: rank %d may not dial rank %d (only higher ranks dial)", who, them.rank, rank)
	}
	return them.rank, them.flags, nil
}

func rankName(r int) string { return fmt.Sprintf("rank %d", r) }

// hsError is a handshake I/O failure; retry says a dialer may try again.
type hsError struct {
	err   error
	retry bool
}

func (e *hsError) Error() string { return e.err.Error() }
func (e *hsError) Unwrap() error { return e.err }

func hsIOError(who string, c net.Conn, err error) error {
	if IsTimeout(err) {
		return &hsError{kx.Errorf(kx.CodeTimeout, "handshake with %s at %s timed out", who, c.RemoteAddr()), true}
	}
	return &hsError{kx.Errorf(kx.CodeNet, "handshake with %s at %s: %v", who, c.RemoteAddr(), err), true}
}

// IsTimeout reports a deadline that passed, on a connection or in a dial.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
