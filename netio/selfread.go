package netio

import (
	"syscall"
)

// sockStream is a peer's socket as a byte stream for whoever holds the peer's read token:
// through the net.Conn (the reader goroutine, which parks in the runtime's poller) or, while a
// wait reads on its own thread (direct), with read(2) and poll(2) on that thread
// (selfread_linux.go).
type sockStream struct {
	p      *peer
	rc     syscall.RawConn // nil: no raw access (not a kernel socket): waits never read it
	fd     int             // for poll(2) only; every read goes through rc.Control
	direct bool            // guarded by the read token

	// A direct read's call under rc.Control, made once (a closure per read would allocate),
	// with its buffer and results; guarded by the read token.
	readFn func(fd uintptr)
	buf    []byte
	n      int
	err    error
}

func (s *sockStream) init(p *peer) {
	s.p, s.fd = p, -1
	s.readFn = s.readFd
	if sc, ok := p.conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { s.fd = int(fd) })
			s.rc = rc
		}
	}
}

func (s *sockStream) Read(b []byte) (int, error) {
	if !s.direct {
		return s.p.conn.Read(b)
	}
	return s.rawRead(b)
}
