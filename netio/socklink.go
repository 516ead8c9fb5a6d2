package netio

import (
	"bufio"
	"errors"
	"io"
	"kylix/netio/mailbox"
	"kylix/netio/mesh"
	"net"
	"time"
)

// sockLink is a peer's TCP connection as a link: frames written with one writev from the
// caller's buffers, read through a small buffer whose payloads go straight into their places.
type sockLink struct {
	linkRead
	p      *peer
	stream sockStream    // what br reads from; guarded by the read token
	br     *bufio.Reader // guarded by the read token

	// guarded by the peer's write lock
	hdr [HeaderSize]byte
	iov net.Buffers
}

func newSockLink(p *peer) *sockLink {
	l := &sockLink{p: p}
	l.stream.init(p)
	// A small buffer: it batches small frames, and a payload read after its header passes
	// through it only for what the header read brought along (docs/netio-notes.md).
	l.br = bufio.NewReaderSize(&l.stream, 4<<10)
	return l
}

func (l *sockLink) rd() *linkRead { return &l.linkRead }

func (l *sockLink) next(hb []byte) (mailbox.Payload, int, error) {
	_, err := io.ReadFull(l.br, hb)
	return l.br, -1, err
}

func (l *sockLink) buffered() bool    { return l.br.Buffered() > 0 }
func (l *sockLink) pending() bool     { return l.stream.readable() }
func (l *sockLink) awaitFrame() error { return l.stream.awaitReadable() }
func (l *sockLink) hidden() bool      { return l.br.Buffered() > 0 }
func (l *sockLink) setDirect(d bool)  { l.stream.direct = d }
func (l *sockLink) kind() string      { return "connection" }
func (l *sockLink) sayBye(time.Time)  {} // the TCP bye follows for every peer (Close)
func (l *sockLink) close()            { l.p.conn.Close() }
func (l *sockLink) fits(n int) bool   { return mesh.SendRoom(l.stream.rc) >= 2*(n+HeaderSize) }
func (l *sockLink) share() bool       { l.shared = l.stream.rc != nil && l.stream.fd >= 0; return l.shared }
func (l *sockLink) writeRaw(b []byte) error {
	t := l.p.t
	for off := 0; off < len(b); {
		end := min(off+writeChunk, len(b))
		l.p.conn.SetWriteDeadline(time.Now().Add(t.timeout))
		k, err := l.p.conn.Write(b[off:end])
		off += k
		if err != nil {
			if mesh.IsTimeout(err) {
				l.p.down(mailbox.LostError(l.p.rank, "connection dropped after a send timed out"))
				return err
			}
			return l.p.writeBroken(l, err)
		}
	}
	return nil
}

func (l *sockLink) closeWrite() {
	if tc, ok := l.p.conn.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (l *sockLink) ended(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed without a bye (process died?)"
	}
	return err.Error()
}

func (l *sockLink) write(h Header, bufs [][]byte, hard time.Time) error {
	_, err := l.writeFrame(&h, bufs, hard, nil)
	return err
}

// writeFrame writes the header and bufs; the caller holds the write lock. With detach set, a
// write that times out because detach was asked for (latesend.go) is not a failure: what is left
// of the frame is returned, copied, for the caller to finish in the background.
func (l *sockLink) writeFrame(h *Header, bufs [][]byte, hard time.Time, detach *detacher) (rest []byte, err error) {
	p := l.p
	t := p.t
	EncodeHeader(l.hdr[:], h)
	i, off := 0, 0 // next byte to send: bufs[i][off:]
	first := true
	for first || i < len(bufs) {
		iov := l.iov[:0]
		size := 0
		if first {
			iov = append(iov, l.hdr[:])
			size = HeaderSize
			first = false
		}
		for i < len(bufs) && size < writeChunk {
			b := bufs[i][off:]
			if room := writeChunk - size; len(b) > room {
				iov = append(iov, b[:room])
				off += room
				size += room
				break
			}
			if len(b) > 0 {
				iov = append(iov, b)
			}
			size += len(b)
			i, off = i+1, 0
		}
		backing := iov
		switch {
		case detach != nil:
			detach.arm(p.conn, time.Now().Add(t.timeout))
		case hard.IsZero():
			p.conn.SetWriteDeadline(time.Now().Add(t.timeout))
		default:
			p.conn.SetWriteDeadline(hard)
		}
		l.iov = iov // WriteTo takes the list's address: a field of l's, not a local that escapes
		_, err := l.iov.WriteTo(p.conn)
		if err != nil && detach != nil && mesh.IsTimeout(err) && detach.asked() {
			rest = remainder(l.iov, bufs, i, off)
		}
		clear(backing) // drop references to the caller's memory
		l.iov = backing[:0]
		if rest != nil {
			return rest, nil
		}
		if err != nil {
			return nil, p.writeFailed(h, err)
		}
	}
	return nil, nil
}
