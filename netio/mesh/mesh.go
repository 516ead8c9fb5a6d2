// Package mesh connects every pair of a job's ranks: a dialer per lower rank and an acceptor
// for the higher ones, the authenticated handshake on each connection (handshake.go), the
// shared-memory segment a pair of one host agrees on after it (pair_linux.go), and the socket
// options that make a dead peer noticed within liveness_ms (sockopt_linux.go). netio builds its
// transport on what Build returns.
package mesh

import (
	"context"
	"errors"
	"fmt"
	"kylix/core/kx"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build connects rank to every other rank: a dialer per lower rank and an acceptor for the
// higher ones on ln, which it closes; the collector keeps what they report. It returns the
// handshaken connections by rank (nil at rank) and what each pair agreed on shared memory
// (pair_linux.go; only when offer and the peer offers too), or an error after closing
// everything; no goroutine outlives it.
//
// gone > 0 says every peer was listening before this call (a resize's admission names only
// addresses already listened on), so a peer whose address refuses connections has lost its
// listener: see goneAfter. gone = 0 when peers may start later (a static peers table).
func Build(ln net.Listener, rank, size int, peers []string, job uint64, secret string, timeout, gone time.Duration, offer bool, debug func(string, ...any)) ([]net.Conn, []Pair, error) {
	m := &mesher{rank: rank, size: size, peers: peers, job: job, secret: secret, timeout: timeout, gone: gone, offer: offer, debug: debug,
		deadline: time.Now().Add(timeout), stop: make(chan struct{}), results: make(chan meshResult),
		pending: &connSet{m: map[net.Conn]struct{}{}}, lastErr: make([]error, size), have: make([]bool, size)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for r := 0; r < rank; r++ {
		m.wg.Add(1)
		go m.dial(r)
	}
	if gone > 0 {
		for r := rank + 1; r < size; r++ {
			m.wg.Add(1)
			go m.probe(r)
		}
	}
	if rank < size-1 {
		m.wg.Add(1)
		go m.accept(ln)
	}
	conns, pairs, err := m.collect()
	close(m.stop)
	m.cancel()
	ln.Close()
	m.pending.stop()
	m.wg.Wait()
	if err != nil {
		for r, c := range conns {
			if c != nil {
				c.Close()
			}
			pairs[r].Close()
		}
		return nil, nil, err
	}
	return conns, pairs, nil
}

// mesher is one rank's mesh being built.
type mesher struct {
	rank, size int
	peers      []string
	job        uint64
	secret     string
	timeout    time.Duration
	gone       time.Duration        // a peer refusing connections this long is gone (0: never judged)
	offer      bool                 // this rank offers shared memory (shm=auto)
	debug      func(string, ...any) // log=debug lines
	deadline   time.Time
	stop       chan struct{}   // closed when the collector is done
	ctx        context.Context // cancelled then too: it cuts a probe's dial short
	cancel     context.CancelFunc
	results    chan meshResult
	pending    *connSet // connections in their handshake
	wg         sync.WaitGroup

	mu      sync.Mutex
	lastErr []error // why a lower rank could not be reached yet
	have    []bool  // the collector holds a connection to this rank
}

// report hands a result to the collector, or closes its connection once nobody collects.
func (m *mesher) report(res meshResult) {
	select {
	case m.results <- res:
	case <-m.stop:
		if res.conn != nil {
			res.conn.Close()
		}
		res.shm.Close()
	}
}

// hsTimeout bounds one handshake by what is left of the time to connect.
func (m *mesher) hsTimeout() time.Duration {
	return max(min(m.timeout, time.Until(m.deadline)), time.Millisecond)
}

// dial connects to lower rank r, retrying with backoff (it may start later) until the deadline,
// or until r is judged gone (goneAfter).
func (m *mesher) dial(r int) {
	defer m.wg.Done()
	backoff := 10 * time.Millisecond
	var refused time.Time // when the current run of refusals began
	for {
		d := net.Dialer{Deadline: m.deadline}
		c, err := d.Dial("tcp", m.peers[r])
		if m.goneAfter(r, &refused, err) {
			return
		}
		if err == nil {
			if !m.pending.add(c) {
				return
			}
			var pair rankedPair
			pair, err = m.handshake(c, true, r)
			m.pending.remove(c)
			if err == nil {
				m.report(meshResult{rank: r, conn: c, shm: pair.Pair})
				return
			}
			c.Close()
			var hs *hsError
			if !errors.As(err, &hs) {
				m.report(meshResult{rank: r, err: err})
				return
			}
		} else {
			var dns *net.DNSError
			if errors.As(err, &dns) && dns.IsNotFound {
				m.report(meshResult{rank: r, err: kx.Errorf(kx.CodeNet, "rank %d cannot resolve the address of rank %d (%s): %v", m.rank, r, m.peers[r], err)})
				return
			}
		}
		m.mu.Lock()
		// A dial cut short by the deadline says less than the refusal before it.
		if m.lastErr[r] == nil || !IsTimeout(err) {
			m.lastErr[r] = err
		}
		m.mu.Unlock()
		wait := min(backoff, time.Until(m.deadline))
		if wait <= 0 {
			return // the collector's timer reports the timeout
		}
		if !refused.IsZero() {
			wait = min(wait, m.probeEvery())
		}
		if !m.sleep(wait) {
			return
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// sleep waits d, or less when the collector is done; false in that case.
func (m *mesher) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-m.stop:
		return false
	case <-tm.C:
		return true
	}
}

// goneAfter judges peer r by one connection attempt's err, refused holding when the current run
// of refusals began, and reports r gone (CodePeer) once the run lasts m.gone. Why a refusal
// means a dead peer here: every address of the mesh was listening before Build started, and a
// rank closes its listener only when its own Build ends, which cannot happen while it still
// lacks its connection to this rank, or when its process exits; so nobody listening means the
// process is gone (or gave up on this mesh). The run only rides out the moment between a peer
// finishing its side of the last handshake and this side seeing it. A peer alive but slow
// still accepts connections (the kernel does, even before it calls accept), and a dial that
// times out says nothing (an unreachable host may come back): both wait for the timeout.
func (m *mesher) goneAfter(r int, refused *time.Time, err error) bool {
	if m.gone <= 0 {
		return false
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		*refused = time.Time{}
		return false
	}
	now := time.Now()
	if refused.IsZero() {
		*refused = now
	}
	if now.Sub(*refused) < m.gone {
		return false
	}
	m.report(meshResult{rank: r, err: kx.Errorf(kx.CodePeer, "rank %d is gone: nothing has listened at its address %s for %v (its process exited, or it gave up connecting this mesh); rank %d stopped waiting for it",
		kx.RankRef(r), m.peers[r], now.Sub(*refused).Round(time.Millisecond), m.rank)})
	return true
}

// probeEvery is how often a peer that may be gone is tried: a few times within m.gone.
func (m *mesher) probeEvery() time.Duration {
	return min(max(m.gone/4, 10*time.Millisecond), 500*time.Millisecond)
}

// probe watches higher rank r, which dials this rank: until its connection arrives, it connects
// to r's listener now and then (closing at once: r's acceptor drops it as a broken client) to
// learn whether r is still there (goneAfter).
func (m *mesher) probe(r int) {
	defer m.wg.Done()
	var refused time.Time
	for m.sleep(m.probeEvery()) {
		m.mu.Lock()
		have := m.have[r]
		m.mu.Unlock()
		if have {
			return
		}
		d := net.Dialer{Timeout: m.probeEvery()}
		c, err := d.DialContext(m.ctx, "tcp", m.peers[r])
		if err == nil {
			c.Close()
		}
		if m.goneAfter(r, &refused, err) {
			return
		}
	}
}

// handshake authenticates c and then, when both ranks offer it, agrees on shared memory
// with the peer (the acceptor, the lower rank, creates the segment).
func (m *mesher) handshake(c net.Conn, dial bool, peer int) (rankedPair, error) {
	flags := uint8(0)
	if m.offer {
		flags = helloShm
	}
	r, theirs, err := handshake(c, dial, m.rank, m.size, peer, m.job, m.secret, m.hsTimeout(), flags)
	if err != nil || flags&theirs&helloShm == 0 {
		return rankedPair{rank: r}, err
	}
	pair, err := negotiateShm(c, !dial, m.rank, r, m.job, time.Now().Add(m.hsTimeout()), m.debug)
	if err != nil {
		return rankedPair{rank: r}, hsIOError(rankName(r), c, err)
	}
	return rankedPair{rank: r, Pair: pair}, nil
}

type rankedPair struct {
	rank int
	Pair
}

// accept takes the higher ranks' connections on ln, a handshake goroutine each, until ln is
// closed.
func (m *mesher) accept(ln net.Listener) {
	defer m.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			select {
			case <-m.stop:
			default:
				m.report(meshResult{rank: m.rank, err: kx.Errorf(kx.CodeNet, "rank %d cannot accept on %s: %v", m.rank, ln.Addr(), err)})
			}
			return
		}
		if !m.pending.add(c) {
			return
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			pair, err := m.handshake(c, false, -1)
			r := pair.rank
			m.pending.remove(c)
			if err != nil {
				c.Close()
				var hs *hsError
				if !errors.As(err, &hs) { // garbage or a broken client: keep waiting
					m.report(meshResult{rank: r, err: err})
				}
				return
			}
			m.report(meshResult{rank: r, conn: c, shm: pair.Pair})
		}()
	}
}

// collect keeps the connections reported until every peer has one, a dialer or the acceptor
// fails, or the deadline passes.
func (m *mesher) collect() ([]net.Conn, []Pair, error) {
	conns := make([]net.Conn, m.size)
	pairs := make([]Pair, m.size)
	missing := m.size - 1
	timer := time.NewTimer(time.Until(m.deadline))
	defer timer.Stop()
	for missing > 0 {
		select {
		case res := <-m.results:
			switch {
			case res.err != nil:
				return conns, pairs, res.err
			case conns[res.rank] != nil:
				// The dialer gave up on an earlier connection and tried again: keep the new one.
				conns[res.rank].Close()
				pairs[res.rank].Close()
				conns[res.rank], pairs[res.rank] = res.conn, res.shm
			default:
				conns[res.rank], pairs[res.rank] = res.conn, res.shm
				missing--
				m.mu.Lock()
				m.have[res.rank] = true
				m.mu.Unlock()
			}
		case <-timer.C:
			return conns, pairs, m.timeoutError(conns)
		}
	}
	return conns, pairs, nil
}

// timeoutError names the ranks still missing and why the lower ones could not be reached.
func (m *mesher) timeoutError(conns []net.Conn) error {
	var miss []int
	for r := 0; r < m.size; r++ {
		if r != m.rank && conns[r] == nil {
			miss = append(miss, r)
		}
	}
	sort.Ints(miss)
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d timed out after %v waiting for ranks %v to connect", m.rank, m.timeout, miss)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range miss {
		if r < m.rank && m.lastErr[r] != nil {
			fmt.Fprintf(&b, "; rank %d at %s: %v", r, m.peers[r], m.lastErr[r])
		}
	}
	return kx.Errorf(kx.CodeTimeout, "%s", b.String())
}

type meshResult struct {
	rank int
	conn net.Conn
	shm  Pair
	err  error // fatal: the mesh cannot be built
}

// connSet holds connections still in their handshake, so giving up can interrupt them.
type connSet struct {
	mu      sync.Mutex
	stopped bool
	m       map[net.Conn]struct{}
}

func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		c.Close()
		return false
	}
	s.m[c] = struct{}{}
	return true
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *connSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for c := range s.m {
		c.Close()
	}
}
