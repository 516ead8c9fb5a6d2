package netio

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"kylix/core/kx"
	"net"
	"sort"
	"sync"
	"time"
)

// Rendezvous protocol: length-prefixed JSON messages (4-byte little-endian length).
//
//	server → client  {type:"challenge", v, nonce}
//	client → server  {type:"register", v, rank, size, addr, nonce, proof}
//	                 proof = HMAC(secret, "register" | server nonce | client nonce | rank | size | addr)
//	client → server  {type:"status?"}            (optional, when the client is about to give up)
//	server → client  {type:"status", missing}
//	server → client  {type:"table", peers, job, proof} once every rank registered
//	                 proof = HMAC(secret, "table" | server nonce | client nonce | job | peers)
//	server → client  {type:"error", code, error} on refusal (bad proof, size, duplicate rank)
//
// Both sides prove the secret; it never travels. The server serves exactly one job.
const rdvVersion = 1

const rdvMaxMsg = 16 << 20

type rdvMsg struct {
	Type    string   `json:"type"`
	V       int      `json:"v,omitempty"`
	Nonce   []byte   `json:"nonce,omitempty"`
	Rank    int      `json:"rank,omitempty"`
	Size    int      `json:"size,omitempty"`
	Addr    string   `json:"addr,omitempty"`
	Proof   []byte   `json:"proof,omitempty"`
	Peers   []string `json:"peers,omitempty"`
	Job     uint64   `json:"job,omitempty"`
	Missing []int    `json:"missing,omitempty"`
	Code    int      `json:"code,omitempty"`
	Error   string   `json:"error,omitempty"`
}

func writeMsg(w io.Writer, m *rdvMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	buf := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readMsg(r io.Reader) (*rdvMsg, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(lb[:])
	if n > rdvMaxMsg {
		return nil, &badRdvMsg{fmt.Sprintf("it sent %q, a message of %d bytes, over the bound", lb[:], n)}
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	m := &rdvMsg{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, &badRdvMsg{fmt.Sprintf("bad message: %v", err)}
	}
	return m, nil
}

// badRdvMsg is a message that is not the rendezvous protocol's.
type badRdvMsg struct{ why string }

func (e *badRdvMsg) Error() string { return e.why }

// challengeWait bounds the wait for a rendezvous's first message, which it sends on accept.
const challengeWait = 5 * time.Second

func registerProof(secret string, serverNonce, clientNonce []byte, rank, size int, addr string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylix-rendezvous-v1\x00register\x00"))
	writeBytes(mac, serverNonce)
	writeBytes(mac, clientNonce)
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(rank))
	binary.LittleEndian.PutUint32(b[4:], uint32(size))
	mac.Write(b[:])
	writeBytes(mac, []byte(addr))
	return mac.Sum(nil)
}

func tableProof(secret string, serverNonce, clientNonce []byte, job uint64, peers []string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylix-rendezvous-v1\x00table\x00"))
	writeBytes(mac, serverNonce)
	writeBytes(mac, clientNonce)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], job)
	mac.Write(b[:])
	binary.LittleEndian.PutUint32(b[:4], uint32(len(peers)))
	mac.Write(b[:4])
	for _, p := range peers {
		writeBytes(mac, []byte(p))
	}
	return mac.Sum(nil)
}

// writeBytes writes a length-prefixed field, so concatenations cannot be ambiguous.
func writeBytes(w io.Writer, b []byte) {
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(len(b)))
	w.Write(l[:])
	w.Write(b)
}

// RendezvousServer lets the ranks of one job find each other: each registers its listening
// address, and once all size ranks have, each gets the full table and a fresh random job id.
type RendezvousServer struct {
	ln      net.Listener
	size    int
	secret  string
	timeout time.Duration

	mu     sync.Mutex
	regs   map[int]*rdvReg
	conns  map[net.Conn]struct{}
	served bool
	closed bool
	causes map[int]Cause // the failures ranks reported after the table (cause.go)
	err    error         // outcome, once done is closed
	done   chan struct{} // closed when the job was served or the server closed
	once   sync.Once     // closes done
	wg     sync.WaitGroup
}

type rdvReg struct {
	rank        int
	conn        net.Conn
	addr        string
	serverNonce []byte
	clientNonce []byte
	wmu         sync.Mutex
}

// NewRendezvousServer listens on addr (":0" picks a port; see Addr) for the size ranks of one
// job. Every exchange with a client is bounded by timeout.
func NewRendezvousServer(addr string, size int, secret string, timeout time.Duration) (*RendezvousServer, error) {
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
	return serveRendezvousOn(ln, size, secret, timeout), nil
}

// serveRendezvousOn is NewRendezvousServer on a listener the caller bound (size and timeout
// already checked); the server owns ln from now on.
func serveRendezvousOn(ln net.Listener, size int, secret string, timeout time.Duration) *RendezvousServer {
	s := &RendezvousServer{ln: ln, size: size, secret: secret, timeout: timeout,
		regs: map[int]*rdvReg{}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

// Addr is the address the server listens on, with the port actually bound.
func (s *RendezvousServer) Addr() string { return s.ln.Addr().String() }

// Wait blocks until every rank got the table (nil), or the server was closed before (CodeState
// naming the ranks that never registered), or a table could not be sent (CodeNet).
func (s *RendezvousServer) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the server and drops every client still connected.
func (s *RendezvousServer) Close() error {
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

func (s *RendezvousServer) missingLocked() []int {
	var miss []int
	for r := 0; r < s.size; r++ {
		if s.regs[r] == nil {
			miss = append(miss, r)
		}
	}
	return miss
}

func (s *RendezvousServer) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed (served or Close)
		}
		s.mu.Lock()
		if s.closed || s.served {
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

func (s *RendezvousServer) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *RendezvousServer) refuse(c net.Conn, code kx.Code, format string, args ...any) {
	writeMsg(c, &rdvMsg{Type: "error", Code: int(code), Error: fmt.Sprintf(format, args...)})
}

func (s *RendezvousServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer s.forget(c)
	c.SetDeadline(time.Now().Add(s.timeout))
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if writeMsg(c, &rdvMsg{Type: "challenge", V: rdvVersion, Nonce: nonce}) != nil {
		return
	}
	m, err := readMsg(c)
	if err != nil || m.Type != "register" {
		return
	}
	if m.V != rdvVersion {
		s.refuse(c, kx.CodeAuth, "the rendezvous speaks version %d, the rank %d", rdvVersion, m.V)
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
	reg := &rdvReg{rank: m.Rank, conn: c, addr: m.Addr, serverNonce: nonce, clientNonce: m.Nonce}
	s.mu.Lock()
	if s.served || s.closed {
		s.mu.Unlock()
		return
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
			writeMsg(c, &rdvMsg{Type: "status", Missing: miss})
			reg.wmu.Unlock()
		}
		if m.Type == "cause" {
			s.recordCause(reg, m)
		}
	}
}

// sendTables sends every rank the table, then closes the job: the server forgets it.
func (s *RendezvousServer) sendTables() {
	var jb [8]byte
	rand.Read(jb[:])
	job := binary.LittleEndian.Uint64(jb[:])
	s.mu.Lock()
	regs := s.regs
	s.regs = map[int]*rdvReg{}
	s.ln.Close()
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
			err := writeMsg(reg.conn, &rdvMsg{Type: "table", Peers: peers, Job: job,
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

// rendezvousLookup registers rank (listening at myAddr) with the rendezvous server at addr and
// waits for the table and the job id. A myAddr with no host (":port") or an unspecified one
// advertises the local address of the connection to the server. Bounded by timeout overall.
func rendezvousLookup(addr string, rank, size int, myAddr, secret string, timeout time.Duration) ([]string, uint64, error) {
	deadline := time.Now().Add(timeout)
	var c net.Conn
	backoff := 10 * time.Millisecond
	for {
		var err error
		d := net.Dialer{Deadline: deadline}
		if c, err = d.Dial("tcp", addr); err == nil {
			break
		}
		var dns *net.DNSError
		if errors.As(err, &dns) && dns.IsNotFound {
			return nil, 0, kx.Errorf(kx.CodeNet, "rank %d cannot resolve the rendezvous address %s: %v", rank, addr, err)
		}
		wait := min(backoff, time.Until(deadline))
		if wait <= 0 {
			return nil, 0, kx.Errorf(kx.CodeTimeout, "rank %d could not reach the rendezvous at %s within %v: %v", rank, addr, timeout, err)
		}
		time.Sleep(wait)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	kept := false
	defer func() {
		if !kept {
			c.Close()
		}
	}()
	fail := func(err error) ([]string, uint64, error) {
		if isTimeout(err) {
			return nil, 0, kx.Errorf(kx.CodeTimeout, "rank %d: the rendezvous at %s did not answer within %v", rank, addr, timeout)
		}
		return nil, 0, kx.Errorf(kx.CodeNet, "rank %d: rendezvous at %s: %v", rank, addr, err)
	}
	// A rendezvous sends its challenge as soon as it accepts: a port that answers otherwise,
	// or not at all, is taken by another program, which is said at once, not after timeout.
	first := time.Now().Add(challengeWait)
	if deadline.Before(first) {
		first = deadline
	}
	c.SetDeadline(first)
	ch, err := readMsg(c)
	if err != nil {
		var bad *badRdvMsg
		switch {
		case errors.As(err, &bad):
			return nil, 0, kx.Errorf(kx.CodeNet, "rank %d: %s is not a Kylix rendezvous (%v): is the port taken by another program?", rank, addr, err)
		case isTimeout(err):
			return nil, 0, kx.Errorf(kx.CodeNet, "rank %d: the process at %s accepted the connection but sent no rendezvous challenge within %v: is the port taken by another program?", rank, addr, min(timeout, challengeWait))
		}
		return fail(err)
	}
	c.SetDeadline(deadline)
	if ch.Type != "challenge" || ch.V != rdvVersion {
		return nil, 0, kx.Errorf(kx.CodeAuth, "rank %d: the rendezvous at %s speaks another protocol (version %d, this rank %d)", rank, addr, ch.V, rdvVersion)
	}
	host, port, err := net.SplitHostPort(myAddr)
	if err != nil {
		return nil, 0, kx.Errorf(kx.CodeArg, "rendezvous: own address %q is not host:port", myAddr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		myAddr = net.JoinHostPort(c.LocalAddr().(*net.TCPAddr).IP.String(), port)
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	reg := &rdvMsg{Type: "register", V: rdvVersion, Rank: rank, Size: size, Addr: myAddr, Nonce: nonce,
		Proof: registerProof(secret, ch.Nonce, nonce, rank, size, myAddr)}
	if err := writeMsg(c, reg); err != nil {
		return fail(err)
	}
	// Wait for the table; shortly before giving up, ask who is still missing so the timeout can
	// name them.
	margin := min(timeout/4, time.Second)
	c.SetReadDeadline(deadline.Add(-margin))
	asked := false
	var missing []int
	for {
		m, err := readMsg(c)
		if err != nil {
			if isTimeout(err) && !asked {
				asked = true
				c.SetDeadline(deadline)
				if writeMsg(c, &rdvMsg{Type: "status?"}) == nil {
					continue
				}
			}
			if isTimeout(err) {
				if missing != nil {
					return nil, 0, kx.Errorf(kx.CodeTimeout, "rank %d timed out after %v at the rendezvous %s: ranks %v have not registered", rank, timeout, addr, missing)
				}
				return nil, 0, kx.Errorf(kx.CodeTimeout, "rank %d timed out after %v at the rendezvous %s waiting for the other ranks", rank, timeout, addr)
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, 0, kx.Errorf(kx.CodeNet, "rank %d: the rendezvous at %s hung up (it serves one job; was it already served?)", rank, addr)
			}
			return fail(err)
		}
		switch m.Type {
		case "status":
			missing = m.Missing
			if missing == nil {
				missing = []int{}
			}
		case "error":
			code := kx.Code(m.Code)
			if code <= kx.OK || code > kx.CodeInternal {
				code = kx.CodeAuth
			}
			return nil, 0, kx.Errorf(code, "the rendezvous at %s refused rank %d: %s", addr, rank, m.Error)
		case "table":
			if !hmac.Equal(m.Proof, tableProof(secret, ch.Nonce, nonce, m.Job, m.Peers)) {
				return nil, 0, kx.Errorf(kx.CodeAuth, "rank %d: the rendezvous at %s failed authentication: wrong secret", rank, addr)
			}
			if len(m.Peers) != size || m.Peers[rank] != myAddr {
				return nil, 0, kx.Errorf(kx.CodeInternal, "rank %d: the rendezvous sent a table of %d ranks not listing this rank", rank, len(m.Peers))
			}
			kept = true
			keepCauseLine(c)
			return m.Peers, m.Job, nil
		}
	}
}
