package members

import (
	"fmt"
	"kylix/core/kx"
	"slices"
	"time"
)

// The simulated join side of a resize: the job's join server (netio/rendezvous/join.go's
// rules: an admit offers every waiting joiner a place, takes those that confirm within the
// liveness window, waits up to Wait for Need of them, places them with kx.Place and tells each
// its rank), the members' Grower and listeners, joiner processes, and the fresh mesh a resize
// with joiners connects (complete once every rank of the admission has come to it).

type simJoiner struct {
	id       int
	addr     string
	proc     *simProc
	waiting  bool // registered and not yet placed or forgotten
	accepted map[uint64]bool
	rank     int
	adm      *kx.Admission // set when the server placed it and its answer arrived
}

type simMesh struct {
	peers   []string
	arrived map[string]bool
	procs   []*simProc
	fail    error
	done    bool
}

type simJoin struct {
	net     *simNet
	waiting []*simJoiner // in arrival order
	joiners []*simJoiner
	// arrival is the admit waiting for a joiner to come, if any.
	arrival func()
	offers  uint64
	nextJob uint64
	meshes  map[uint64]*simMesh
	procOf  map[string]*simProc
	gone    map[string]bool // processes killed, by address
	admits  int
	placed  int
}

func newSimJoin(nt *simNet) *simJoin {
	return &simJoin{net: nt, meshes: map[uint64]*simMesh{}, procOf: map[string]*simProc{}, gone: map[string]bool{}}
}

func memberAddr(r int) string { return fmt.Sprintf("m%d", r) }

// ---- joiners ---------------------------------------------------------------------------------

// joinerOutcome is what a joiner's kylix_init came to.
type joinerOutcome struct {
	admitted bool
	rank     int
	adm      *kx.Admission
	err      error
}

// addJoiner starts a joiner process at arrive; it waits to be admitted until giveUp, then
// connects the admitted comm.
func (j *simJoin) addJoiner(arrive, giveUp time.Duration, out *joinerOutcome) *simJoiner {
	jn := &simJoiner{id: len(j.joiners), accepted: map[uint64]bool{}}
	jn.addr = fmt.Sprintf("j%d", jn.id)
	j.joiners = append(j.joiners, jn)
	s := j.net.s
	jn.proc = s.spawn("joiner "+jn.addr, arrive, func(p *simProc) {
		s.at(s.now+j.net.delay(), func() { j.arrive(jn) })
		for jn.adm == nil {
			if s.now >= giveUp {
				return // not admitted: it would wait for a later resize
			}
			p.block(giveUp)
		}
		out.admitted, out.rank, out.adm = true, jn.rank, jn.adm
		_, out.err = j.mesh(p, jn.addr, jn.rank, *jn.adm)
	})
	j.procOf[jn.addr] = jn.proc
	return jn
}

func (j *simJoin) arrive(jn *simJoiner) {
	if jn.proc.killed {
		return
	}
	jn.waiting = true
	j.waiting = append(j.waiting, jn)
	if f := j.arrival; f != nil {
		j.arrival = nil
		f()
	}
}

// kill crashes a process of the join side (a joiner, or a member's listener with its process):
// the server forgets a waiting joiner, and a mesh it has not reached fails.
func (j *simJoin) kill(addr string) {
	j.gone[addr] = true
	s := j.net.s
	s.at(s.now+j.net.delay(), func() {
		j.waiting = slices.DeleteFunc(j.waiting, func(x *simJoiner) bool { return x.addr == addr })
		for _, m := range j.meshes {
			if !m.done && m.fail == nil && slices.Contains(m.peers, addr) && !m.arrived[addr] {
				m.fail = kx.Errorf(kx.CodePeer, "connecting the resized comm: %s is lost", addr)
				for _, p := range m.procs {
					s.makeReady(p)
				}
			}
		}
	})
}

// ---- the server's admit ----------------------------------------------------------------------

type admitReply struct {
	adm kx.Admission
	err error
}

// admit serves one admit request, calling reply once with its answer (on the server's side,
// whatever became of the leader).
func (j *simJoin) admit(req kx.AdmitRequest, reply func(admitReply)) {
	s := j.net.s
	j.admits++
	holes := 0
	for _, a := range req.Members {
		if a == "" {
			holes++
		}
	}
	liveness := req.Liveness
	if liveness <= 0 {
		liveness = kx.DefaultLiveness
	}
	deadline := s.now + req.Wait
	var try func()
	finish := func(ok []*simJoiner) {
		n := kx.AdmitCount(len(ok), holes, req.Replication)
		if n >= req.Need {
			reply(admitReply{adm: j.place(req, ok[:n])})
			return
		}
		if s.now >= deadline {
			reply(admitReply{err: kx.Errorf(kx.CodeTimeout, "min_size: %d more ranks needed, %d joiners ready within %v", req.Need, n, req.Wait)})
			return
		}
		once := false
		again := func() {
			if !once {
				once = true
				j.arrival = nil
				try()
			}
		}
		j.arrival = again
		s.at(deadline, again)
	}
	try = func() {
		snap := slices.Clone(j.waiting)
		if kx.AdmitCount(len(snap), holes, req.Replication) == 0 {
			finish(nil)
			return
		}
		j.offer(snap, min(liveness, max(deadline-s.now, 200*time.Millisecond)), finish)
	}
	try()
}

// offer asks each joiner of snap to confirm, and passes on those that did within window, in
// arrival order. A stopped joiner confirms when it runs again, which may be too late.
func (j *simJoin) offer(snap []*simJoiner, window time.Duration, then func([]*simJoiner)) {
	s := j.net.s
	j.offers++
	id := j.offers
	confirmed, over := 0, false
	end := func() {
		if over {
			return
		}
		over = true
		var ok []*simJoiner
		for _, jn := range snap {
			if jn.accepted[id] && jn.waiting {
				ok = append(ok, jn)
			}
		}
		then(ok)
	}
	for _, jn := range snap {
		s.at(s.now+j.net.delay(), func() {
			if jn.proc.killed {
				return
			}
			back := max(s.now, jn.proc.paused) + j.net.delay() + j.net.delay()
			s.at(back, func() {
				if !jn.proc.killed && !over {
					jn.accepted[id] = true
					if confirmed++; confirmed == len(snap) {
						end() // the server waits no longer once everyone confirmed
					}
				}
			})
		})
	}
	s.at(s.now+window, end)
}

// place lays out the membership and tells the admitted joiners.
func (j *simJoin) place(req kx.AdmitRequest, admitted []*simJoiner) kx.Admission {
	s := j.net.s
	j.nextJob++
	adm := kx.Admission{Job: j.nextJob, Joiners: len(admitted), Replication: req.Replication,
		Degrees: req.Degrees, Compress: req.Compress, MinPacket: req.MinPacket}
	if len(admitted) == 0 {
		adm.Prev = req.Prev
		return adm
	}
	addrs := make([]string, len(admitted))
	for i, jn := range admitted {
		addrs[i] = jn.addr
	}
	adm.Peers, adm.Prev = kx.Place(req.Members, req.Prev, req.Replication, addrs)
	j.placed += len(admitted)
	for _, jn := range admitted {
		jn.waiting = false
		rank := slices.Index(adm.Peers, jn.addr)
		a := adm
		s.at(s.now+j.net.delay(), func() {
			if !jn.proc.killed {
				jn.rank, jn.adm = rank, &a
				s.makeReady(jn.proc)
			}
		})
	}
	j.waiting = slices.DeleteFunc(j.waiting, func(x *simJoiner) bool { return !x.waiting })
	return adm
}

// ---- the fresh mesh ----------------------------------------------------------------------

// mesh connects addr as rank of admission a: it completes once every rank of a has come, fails
// when one of them is lost before, and times out after the transport's timeout.
func (j *simJoin) mesh(p *simProc, addr string, rank int, a kx.Admission) (kx.Transport, error) {
	s := j.net.s
	m := j.meshes[a.Job]
	if m == nil {
		m = &simMesh{peers: a.Peers, arrived: map[string]bool{}}
		j.meshes[a.Job] = m
		for _, x := range a.Peers {
			if j.gone[x] {
				m.fail = kx.Errorf(kx.CodePeer, "connecting the resized comm: %s is lost", x)
			}
		}
	}
	m.arrived[addr] = true
	m.procs = append(m.procs, p)
	if !m.done && m.fail == nil && len(m.arrived) == len(m.peers) {
		m.done = true
		for _, q := range m.procs {
			s.at(s.now+j.net.delay(), func() { s.makeReady(q) })
		}
	}
	due := s.now + j.net.timeout
	for {
		switch {
		case m.done:
			return simTransport{p: &simMeshed{rank: rank, size: len(a.Peers)}}, nil
		case m.fail != nil:
			return nil, m.fail
		case s.now >= due:
			return nil, kx.Errorf(kx.CodeTimeout, "connecting the resized comm: not every rank came within %v", j.net.timeout)
		}
		p.block(due)
	}
}

// simMeshed is the transport of a resized comm with joiners: the simulation ends at its birth.
type simMeshed struct{ rank, size int }

func (m *simMeshed) Rank() int                    { return m.rank }
func (m *simMeshed) Size() int                    { return m.size }
func (m *simMeshed) Timeout() time.Duration       { return time.Second }
func (m *simMeshed) Begin(uint64, kx.Fingerprint) {}
func (m *simMeshed) Send(int, kx.Tag, ...[]byte) error {
	return kx.Errorf(kx.CodeState, "not simulated")
}
func (m *simMeshed) Recv(int, kx.Tag) ([]byte, error) {
	return nil, kx.Errorf(kx.CodeState, "not simulated")
}
func (m *simMeshed) Release([]byte)               {}
func (m *simMeshed) FailedRanks() []int           { return nil }
func (m *simMeshed) Abort(uint64, error)          {}
func (m *simMeshed) SetReplicaGroups([]int) error { return nil }
func (m *simMeshed) Close() error                 { return nil }

// ---- a member's side: kx.Grower and kx.MeshListener -----------------------------------------

type simGrower struct {
	j  *simJoin
	ep *simEP
}

func (g *simGrower) JoinAddress() string { return "sim-join" }

func (g *simGrower) Listen() (kx.MeshListener, error) {
	return &simListener{j: g.j, p: g.ep.proc, addr: memberAddr(g.ep.rank)}, nil
}

// Admit is the leader's exchange with the server: the request and the answer each take a
// message's time; the leader waits as rendezvous.Admit does (Wait + Liveness + timeout).
func (g *simGrower) Admit(req kx.AdmitRequest) (kx.Admission, error) {
	j, s, p := g.j, g.j.net.s, g.ep.proc
	var got *admitReply
	s.at(s.now+j.net.delay(), func() {
		j.admit(req, func(r admitReply) {
			s.at(s.now+j.net.delay(), func() {
				got = &r
				s.makeReady(p)
			})
		})
	})
	due := s.now + req.Wait + req.Liveness + j.net.timeout
	for got == nil {
		if s.now >= due {
			return kx.Admission{}, kx.Errorf(kx.CodeNet, "the join server did not answer within %v", due)
		}
		p.block(due)
	}
	return got.adm, got.err
}

type simListener struct {
	j    *simJoin
	p    *simProc
	addr string
}

func (l *simListener) Addr() string { return l.addr }
func (l *simListener) Close()       {}
func (l *simListener) Mesh(rank int, a kx.Admission) (kx.Transport, error) {
	return l.j.mesh(l.p, l.addr, rank, a)
}
