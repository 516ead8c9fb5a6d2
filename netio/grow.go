package netio

import (
	"kylix/core/kx"
	"kylix/netio/rendezvous"
	"net"
	"strconv"
	"sync"
	"time"
)

// Elastic membership over TCP (kx.Grower): how a resize admits joiners and connects them.
// A resize with joiners builds a fresh full mesh of the new membership, survivors and joiners
// alike, with the same code as start-up (netio/mesh): a new job id from the join server, so no
// handshake of the old mesh or of another resize can be taken for this one, and sequence
// numbers from 0. The old comm keeps its own transport until it is finalized. A resize without
// joiners needs no connection at all (the new comm keeps the old transport).

// joinServers keeps the rendezvous that rank 0 served itself (no launcher) when the job is
// elastic: it is the job's join address and lives as long as rank 0's process, so when rank 0
// dies nobody can join any more (a job started by kylixrun joins through the launcher's server).
var (
	joinMu      sync.Mutex
	joinServers []*rendezvous.Server
)

func keepJoinServer(s *rendezvous.Server) {
	joinMu.Lock()
	joinServers = append(joinServers, s)
	joinMu.Unlock()
}

// Grower is a member's (or an admitted joiner's) side of the job's join server.
type Grower struct {
	o    kx.Options
	addr string // the join address: the job's rendezvous
}

// NewGrower is the grower of a comm built from o: its join address is o.Join for a joiner, else
// the rendezvous. CodeArg when there is none (a static peers table cannot take joiners).
func NewGrower(o kx.Options) (*Grower, error) {
	addr := o.Join
	if addr == "" {
		addr = o.Rendezvous
	}
	if addr == "" {
		return nil, kx.Errorf(kx.CodeArg, "elastic=1 needs a rendezvous (the job's join address), not a static peers table")
	}
	return &Grower{o: o, addr: addr}, nil
}

// JoinAddress is the job's join address.
func (g *Grower) JoinAddress() string { return g.addr }

// Listen opens a listener on every interface, advertising the local address this host uses to
// reach the join server (what the rendezvous client advertises at start-up).
func (g *Grower) Listen() (kx.MeshListener, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, kx.Errorf(kx.CodeNet, "cannot listen for the resized comm: %v", err)
	}
	host := "127.0.0.1"
	if c, err := net.Dial("udp", g.addr); err == nil { // no packet is sent: only a route lookup
		host = c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return &meshListener{g: g, ln: ln, addr: net.JoinHostPort(host, itoa(port))}, nil
}

// Admit is the leader's exchange with the join server.
func (g *Grower) Admit(req kx.AdmitRequest) (kx.Admission, error) {
	return rendezvous.Admit(g.addr, g.o.Secret, req, g.timeout())
}

func (g *Grower) timeout() time.Duration {
	if g.o.Timeout > 0 {
		return g.o.Timeout
	}
	return DefaultTimeout
}

type meshListener struct {
	g    *Grower
	ln   net.Listener
	addr string
}

func (l *meshListener) Addr() string { return l.addr }
func (l *meshListener) Close()       { l.ln.Close() }

// Mesh connects rank of the admitted membership a (mesh closes the listener).
func (l *meshListener) Mesh(rank int, a kx.Admission) (kx.Transport, error) {
	return meshAdmitted(l.ln, l.g.o, rank, a)
}

// meshAdmitted connects rank of a. Every address in a was listening before the admission was
// made (members listen before they send their address to the leader, joiners before they
// register), so a rank that stops listening is gone, not late: the mesh fails with CodePeer
// naming it after half of liveness_ms of refused connections (mesh.Build), so that a dead peer
// is reported within liveness_ms as everywhere else; a peer alive but slow gets timeout_ms.
func meshAdmitted(ln net.Listener, o kx.Options, rank int, a kx.Admission) (*TCP, error) {
	o.Rank, o.Size = rank, len(a.Peers)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	liveness := o.Liveness
	if liveness <= 0 {
		liveness = kx.DefaultLiveness
	}
	return meshTransport(ln, o, a.Peers, a.Job, timeout, liveness/2)
}

// Join is a joiner's kylix_init (option join=host:port): it listens, waits at the join server
// until a resize admits it (up to the timeout), and connects the admitted membership. It
// returns the transport and the admission (the job's planning options, each rank's old rank).
func Join(o kx.Options) (*TCP, kx.Admission, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return nil, kx.Admission{}, kx.Errorf(kx.CodeNet, "joiner cannot listen: %v", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	port := ln.Addr().(*net.TCPAddr).Port
	rank, a, err := rendezvous.Join(o.Join, ":"+itoa(port), o.Secret, timeout)
	if err != nil {
		ln.Close()
		return nil, kx.Admission{}, err
	}
	t, err := meshAdmitted(ln, o, rank, a)
	if err != nil {
		return nil, kx.Admission{}, err
	}
	return t, a, nil
}

func itoa(i int) string { return strconv.Itoa(i) }
