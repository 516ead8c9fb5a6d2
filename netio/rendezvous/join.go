package rendezvous

// The join port: elastic membership (kylix_resize; Zhang and Qiu, "Efficient, Fault-tolerant and
// Elastic Allreduce Framework for Iterative Algorithms" §5-6).
//
// A job's join address is its rendezvous server: kylixrun's Server (which stays up for the
// job's life), or, for a job started without a launcher, the Server rank 0 runs itself
// (ServeOwn), which then dies with rank 0's process: after that nobody can join. After serving
// the table the Server keeps listening and speaks two more exchanges, authenticated like
// registration (challenge nonce, HMAC proofs both ways, protocol version checked; a stranger gets
// CodeAuth and changes nothing):
//
//	joiner → server  {type:"join", v, addr, nonce, proof}      then waits on the connection
//	server → joiner  {type:"offer", offer}                      when a resize considers it
//	joiner → server  {type:"accept", offer}                     within the resize's liveness
//	server → joiner  {type:"admitted", rank, adm, proof}        its place and the new table
//
//	leader → server  {type:"admit", v, req, nonce, proof}       one exchange per resize
//	server → leader  {type:"admission", adm, proof} | {type:"error", code, error}
//
// An admit takes every joiner waiting at that moment that confirms its offer within the
// request's liveness (a joiner that stalls is passed over after liveness_ms and stays waiting
// for a later resize), waits up to req.Wait while fewer than req.Need ranks would come
// (CodeTimeout then, admitting nobody), places them (kx.Place), picks a fresh job id, tells each
// joiner its rank and the table, and answers the leader with the same admission: every member
// and joiner gets one membership. Admits are serialized. A joiner whose connection closes is
// forgotten. Connections that send garbage, a forged length or nothing are closed after the
// server's timeout, as at start-up.
//
// For the launcher: OnAdmit registers a function called after each admission (the new table,
// which ranks are joiners); Waiting lists the addresses of joiners waiting now.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"kylix/core/kx"
	"net"
	"slices"
	"sync"
	"time"
)

// Admitted is what OnAdmit reports: the new comm's table, each rank's rank in the old comm
// (-1 for a joiner), and the job id of the new mesh.
type Admitted struct {
	Peers []string
	Prev  []int
	Job   uint64
}

type joinState struct {
	admitMu sync.Mutex // one admission at a time
	next    uint64     // arrival numbers
	offers  uint64
	waiting []*joiner      // in arrival order (under Server.mu)
	arrived chan struct{}  // closed and replaced at each arrival (under Server.mu)
	onAdmit func(Admitted) // (under Server.mu)
}

type joiner struct {
	arrival     uint64
	conn        net.Conn
	addr        string
	serverNonce []byte
	clientNonce []byte
	wmu         sync.Mutex
	accepts     chan uint64 // offer numbers confirmed
}

// OnAdmit registers f, called with every admission (joiners or not: a resize renumbers the
// members), on the server's goroutine, before the joiners and the leader are told (so the
// launcher knows of a membership before any process runs on it). f must not block.
func (s *Server) OnAdmit(f func(Admitted)) {
	s.mu.Lock()
	s.join.onAdmit = f
	s.mu.Unlock()
}

// Waiting lists the advertised addresses of the joiners waiting now, in arrival order.
func (s *Server) Waiting() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.join.waiting))
	for i, j := range s.join.waiting {
		out[i] = j.addr
	}
	return out
}

func joinProof(secret, label string, serverNonce, clientNonce []byte, payload []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylix-rendezvous-v1\x00" + label + "\x00"))
	writeBytes(mac, serverNonce)
	writeBytes(mac, clientNonce)
	writeBytes(mac, payload)
	return mac.Sum(nil)
}

// serveJoin handles a connection whose first message is a join or an admit.
func (s *Server) serveJoin(c net.Conn, m *message, nonce []byte) {
	who := "joiner"
	if m.Type == "admit" {
		who = "member"
	}
	if m.V != version {
		s.refuse(c, kx.CodeAuth, "the rendezvous speaks version %d, the %s %d", version, who, m.V)
		return
	}
	if m.Type == "admit" {
		s.serveAdmit(c, m, nonce)
		return
	}
	if !hmac.Equal(m.Proof, joinProof(s.secret, "join", nonce, m.Nonce, []byte(m.Addr))) {
		s.refuse(c, kx.CodeAuth, "wrong secret or job")
		return
	}
	if _, _, err := net.SplitHostPort(m.Addr); err != nil {
		s.refuse(c, kx.CodeArg, "the joiner's address %q is not host:port", m.Addr)
		return
	}
	j := &joiner{conn: c, addr: m.Addr, serverNonce: nonce, clientNonce: m.Nonce, accepts: make(chan uint64, 4)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.join.next++
	j.arrival = s.join.next
	s.join.waiting = append(s.join.waiting, j)
	if s.join.arrived != nil {
		close(s.join.arrived)
		s.join.arrived = nil
	}
	s.mu.Unlock()
	c.SetDeadline(time.Time{}) // a joiner may wait for a long time
	defer s.dropJoiner(j)
	for {
		m, err := readMsg(c)
		if err != nil {
			return // gone (or admitted and hung up)
		}
		if m.Type == "accept" {
			select {
			case j.accepts <- m.Job:
			default:
			}
		}
	}
}

func (s *Server) dropJoiner(j *joiner) {
	s.mu.Lock()
	s.join.waiting = slices.DeleteFunc(s.join.waiting, func(x *joiner) bool { return x == j })
	s.mu.Unlock()
}

// arrivals returns a channel closed at the next arrival.
func (s *Server) arrivals() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.join.arrived == nil {
		s.join.arrived = make(chan struct{})
	}
	return s.join.arrived
}

// serveAdmit answers a resize leader's admit: see the file comment.
func (s *Server) serveAdmit(c net.Conn, m *message, nonce []byte) {
	if m.Req == nil || !hmac.Equal(m.Proof, joinProof(s.secret, "admit", nonce, m.Nonce, m.Req)) {
		s.refuse(c, kx.CodeAuth, "wrong secret or job")
		return
	}
	var req kx.AdmitRequest
	if err := json.Unmarshal(m.Req, &req); err != nil || len(req.Prev) != len(req.Members) ||
		req.Replication < 1 || len(req.Members)%req.Replication != 0 || req.Need < 0 {
		s.refuse(c, kx.CodeArg, "malformed admit request")
		return
	}
	c.SetDeadline(time.Now().Add(req.Wait + req.Liveness + s.timeout))
	s.join.admitMu.Lock()
	adm, err := s.admit(req)
	s.join.admitMu.Unlock()
	if err != nil {
		s.refuse(c, kx.CodeOf(err), "%v", err)
		return
	}
	b, _ := json.Marshal(adm)
	writeMsg(c, &message{Type: "admission", Adm: b, Proof: joinProof(s.secret, "admission", nonce, m.Nonce, b)})
}

// admit picks the joiners (admitMu held).
func (s *Server) admit(req kx.AdmitRequest) (kx.Admission, error) {
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
	deadline := time.Now().Add(req.Wait)
	for {
		arrived := s.arrivals()
		s.mu.Lock()
		snap := slices.Clone(s.join.waiting)
		s.mu.Unlock()
		var ok []*joiner
		if kx.AdmitCount(len(snap), holes, req.Replication) > 0 {
			// Near the end of a min_size wait, a stopped joiner is given only what is left (a
			// live one answers in a round trip), so the leader answers within the wait.
			ok = s.offer(snap, min(liveness, max(time.Until(deadline), 200*time.Millisecond)))
		}
		n := kx.AdmitCount(len(ok), holes, req.Replication)
		if n >= req.Need {
			return s.place(req, ok[:n])
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return kx.Admission{}, kx.Errorf(kx.CodeTimeout, "min_size: %d more ranks needed, %d joiners ready within %v", req.Need, n, req.Wait)
		}
		tm := time.NewTimer(wait)
		select {
		case <-arrived:
		case <-tm.C:
		}
		tm.Stop()
	}
}

// offer asks each joiner of snap to confirm, and returns those that did within liveness, in
// arrival order. A joiner that stalls costs this wait only, once per admission.
func (s *Server) offer(snap []*joiner, liveness time.Duration) []*joiner {
	s.join.offers++
	id := s.join.offers
	for _, j := range snap {
		for len(j.accepts) > 0 { // late confirmations of earlier offers
			<-j.accepts
		}
		j.wmu.Lock()
		j.conn.SetWriteDeadline(time.Now().Add(liveness))
		writeMsg(j.conn, &message{Type: "offer", Job: id})
		j.wmu.Unlock()
	}
	end := time.Now().Add(liveness)
	var ok []*joiner
	for _, j := range snap {
		tm := time.NewTimer(max(time.Until(end), 0))
	wait:
		for {
			select {
			case got := <-j.accepts:
				if got == id {
					ok = append(ok, j)
					break wait
				}
			case <-tm.C:
				// Time is up: take a confirmation that is already there (select picks at random
				// among ready cases).
				for len(j.accepts) > 0 {
					if <-j.accepts == id {
						ok = append(ok, j)
						break
					}
				}
				break wait
			}
		}
		tm.Stop()
	}
	return ok
}

// reportAdmission calls the OnAdmit function, if any, before anyone hears of adm.
func (s *Server) reportAdmission(adm kx.Admission) {
	s.mu.Lock()
	f := s.join.onAdmit
	s.mu.Unlock()
	if f != nil {
		f(Admitted{Peers: adm.Peers, Prev: adm.Prev, Job: adm.Job})
	}
}

// place lays out the membership, tells the admitted joiners, and forgets them.
func (s *Server) place(req kx.AdmitRequest, admitted []*joiner) (kx.Admission, error) {
	addrs := make([]string, len(admitted))
	for i, j := range admitted {
		addrs[i] = j.addr
	}
	var jb [8]byte
	rand.Read(jb[:])
	adm := kx.Admission{Job: binary.LittleEndian.Uint64(jb[:]), Joiners: len(admitted), Replication: req.Replication,
		Degrees: req.Degrees, Compress: req.Compress, MinPacket: req.MinPacket}
	if len(admitted) == 0 {
		adm.Prev = req.Prev
		s.reportAdmission(adm)
		return adm, nil
	}
	adm.Peers, adm.Prev = kx.Place(req.Members, req.Prev, req.Replication, addrs)
	s.reportAdmission(adm)
	b, _ := json.Marshal(adm)
	for _, j := range admitted {
		rank := slices.Index(adm.Peers, j.addr)
		rb := fmt.Appendf(nil, "%d:", rank)
		j.wmu.Lock()
		j.conn.SetWriteDeadline(time.Now().Add(s.timeout))
		writeMsg(j.conn, &message{Type: "admitted", Rank: rank, Adm: b,
			Proof: joinProof(s.secret, "admitted", j.serverNonce, j.clientNonce, append(rb, b...))})
		j.wmu.Unlock()
		s.dropJoiner(j)
	}
	return adm, nil
}
