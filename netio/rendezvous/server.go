// Package rendezvous lets the ranks of one job find each other before the mesh is built: a
// server that serves exactly one job (run by kylixrun, or by rank 0 itself under mpirun or srun),
// the client that registers a rank and gets the address table and job id, and the line each rank
// keeps to the launcher afterwards to report why a call failed (cause.go).
package rendezvous

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"kylix/core/kx"
	"net"
	"sort"
	"sync"
	"time"
)

// DefaultTimeout bounds each exchange with a client when the caller gives no timeout.
const DefaultTimeout = 30 * time.Second

// Server lets the ranks of one job find each other: each registers its listening
// address, and once all size ranks have, each gets the full table and a fresh random job id.
type Server struct {
	ln      net.Listener
	size    int
	secret  string
	timeout time.Duration

	mu     sync.Mutex
	regs   map[int]*registration
	conns  map[net.Conn]struct{}
	served bool
	closed bool
	causes map[int]Cause // the failures ranks reported after the table (cause.go)
	join   joinState     // joiners waiting and admissions (join.go)
	err    error         // outcome, once done is closed
	done   chan struct{} // closed when the job was served or the server closed
	once   sync.Once     // closes done
	wg     sync.WaitGroup
}

type registration struct {
	rank        int
	conn        net.Conn
	addr        string
	serverNonce []byte
	clientNonce []byte
	wmu         sync.Mutex
}

// NewServer listens on addr (":0" picks a port; see Addr) for the size ranks of one
// job. Every exchange with a client is bounded by timeout.
func NewServer(addr string, size int, secret string, timeout time.Duration) (*Server, error) {
	if size < 1 {
		return nil, kx.Errorf(kx.CodeArg, "rendezvous: size=%d must be at least 1", size)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, kx.Errorf(kx.CodeNet, "rendezvous: cannot listen on %s: %v", addr, err)
	}
	return serveOn(ln, size, secret, timeout), nil
}

// serveOn is NewServer on a listener the caller bound (size and timeout
// already checked); the server owns ln from now on.
func serveOn(ln net.Listener, size int, secret string, timeout time.Duration) *Server {
	s := &Server{ln: ln, size: size, secret: secret, timeout: timeout,
		regs: map[int]*registration{}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

// Addr is the address the server listens on, with the port actually bound.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Wait blocks until every rank got the table (nil), or the server was closed before (CodeState
// naming the ranks that never registered), or a table could not be sent (CodeNet).
func (s *Server) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the server and drops every client still connected.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		if !s.served {
			s.err = kx.Errorf(kx.CodeState, "rendezvous closed before all ranks registered (missing ranks %v)", s.missingLocked())
			s.once.Do(func() { close(s.done) })
		}
		s.ln.Close()
		for c := range s.conns {
			c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) missingLocked() []int {
	var miss []int
	for r := 0; r < s.size; r++ {
		if s.regs[r] == nil {
			miss = append(miss, r)
		}
	}
	return miss
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed (served or Close)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

func (s *Server) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *Server) refuse(c net.Conn, code kx.Code, format string, args ...any) {
	writeMsg(c, &message{Type: "error", Code: int(code), Error: fmt.Sprintf(format, args...)})
}

func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer s.forget(c)
	c.SetDeadline(time.Now().Add(s.timeout))
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if writeMsg(c, &message{Type: "challenge", V: version, Nonce: nonce}) != nil {
		return
	}
	m, err := readMsg(c)
	if err != nil {
		return
	}
	switch m.Type {
	case "join", "admit":
		// After the table the server stays up for the job's life: joiners wait here, and the
		// leader of a resize asks which of them to admit (join.go).
		s.serveJoin(c, m, nonce)
		return
	case "register":
	default:
		return
	}
	if m.V != version {
		s.refuse(c, kx.CodeAuth, "the rendezvous speaks version %d, the rank %d", version, m.V)
		return
	}
	if !hmac.Equal(m.Proof, registerProof(s.secret, nonce, m.Nonce, m.Rank, m.Size, m.Addr)) {
		s.refuse(c, kx.CodeAuth, "wrong secret")
		return
	}
	if m.Size != s.size {
		s.refuse(c, kx.CodeAuth, "it has size=%d but the job has size=%d", m.Size, s.size)
		return
	}
	if m.Rank < 0 || m.Rank >= s.size {
		s.refuse(c, kx.CodeAuth, "the rank is not in 0..%d", s.size-1)
		return
	}
	reg := &registration{rank: m.Rank, conn: c, addr: m.Addr, serverNonce: nonce, clientNonce: m.Nonce}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if s.served {
		// The job's ranks registering again (kylix_finalize then kylix_init): a new round of
		// the same job. The server stays up after a table (join.go), so it serves this round
		// itself, where before the ranks found the port free and rank 0 served it.
		s.served = false
	}
	if old := s.regs[m.Rank]; old != nil {
		s.mu.Unlock()
		s.refuse(c, kx.CodeAuth, "rank %d is already registered, from %s (listening at %s)",
			m.Rank, old.conn.RemoteAddr(), old.addr)
		return
	}
	s.regs[m.Rank] = reg
	complete := len(s.regs) == s.size
	if complete {
		s.served = true
	}
	s.mu.Unlock()
	c.SetDeadline(time.Time{})
	if complete {
		s.sendTables()
	}
	// Registered: wait for the table. The client only speaks again to ask who is missing; if it
	// hangs up, its registration goes, so a table never names a rank that gave up. After the
	// table the connection stays, for the rank's failure reports (cause.go).
	for {
		m, err := readMsg(c)
		if err != nil {
			s.mu.Lock()
			if !s.served && s.regs[reg.rank] == reg {
				delete(s.regs, reg.rank)
			}
			s.mu.Unlock()
			return
		}
		if m.Type == "status?" {
			s.mu.Lock()
			miss := s.missingLocked()
			s.mu.Unlock()
			reg.wmu.Lock()
			c.SetWriteDeadline(time.Now().Add(s.timeout))
			writeMsg(c, &message{Type: "status", Missing: miss})
			reg.wmu.Unlock()
		}
		if m.Type == "cause" {
			s.recordCause(reg, m)
		}
	}
}

// sendTables sends every rank the table; the server forgets the registrations but keeps
// listening, for joiners (join.go).
func (s *Server) sendTables() {
	var jb [8]byte
	rand.Read(jb[:])
	job := binary.LittleEndian.Uint64(jb[:])
	s.mu.Lock()
	regs := s.regs
	s.regs = map[int]*registration{}
	s.mu.Unlock()
	peers := make([]string, s.size)
	for r, reg := range regs {
		peers[r] = reg.addr
	}
	var failed []int
	var fmu sync.Mutex
	var wg sync.WaitGroup
	for r, reg := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg.wmu.Lock()
			defer reg.wmu.Unlock()
			reg.conn.SetWriteDeadline(time.Now().Add(s.timeout))
			err := writeMsg(reg.conn, &message{Type: "table", Peers: peers, Job: job,
				Proof: tableProof(s.secret, reg.serverNonce, reg.clientNonce, job, peers)})
			if err != nil {
				fmu.Lock()
				failed = append(failed, r)
				fmu.Unlock()
				reg.conn.Close() // ends that rank's serve loop
			}
		}()
	}
	wg.Wait()
	sort.Ints(failed)
	s.mu.Lock()
	if len(failed) > 0 {
		s.err = kx.Errorf(kx.CodeNet, "rendezvous could not send the table to ranks %v", failed)
	}
	s.once.Do(func() { close(s.done) })
	s.mu.Unlock()
}

// Lookup registers rank (listening at myAddr) with the rendezvous server at addr and
