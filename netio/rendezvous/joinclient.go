package rendezvous

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"kylix/core/kx"
	"net"
	"time"
)

// The two clients of the join port (join.go): a joiner waiting for its admission, and the
// leader of a resize asking for one.

// Join registers this process (listening at myAddr; with no host, the local address of its
// connection to the server) as a joiner at the join address addr and waits, up to timeout, for
// a resize to admit it. It returns its rank and the admission. CodeAuth: wrong secret, job or
// protocol version (the message names both versions); CodeTimeout: no resize admitted it.
func Join(addr, myAddr, secret string, timeout time.Duration) (int, kx.Admission, error) {
	cl := &client{addr: addr, rank: -1, secret: secret, timeout: timeout, deadline: time.Now().Add(timeout)}
	c, err := cl.dial()
	if err != nil {
		return 0, kx.Admission{}, err
	}
	defer c.Close()
	ch, err := cl.challenge(c)
	if err != nil {
		return 0, kx.Admission{}, err
	}
	if myAddr, err = advertised(c, myAddr); err != nil {
		return 0, kx.Admission{}, err
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if err := writeMsg(c, &message{Type: "join", V: version, Addr: myAddr, Nonce: nonce,
		Proof: joinProof(secret, "join", ch.Nonce, nonce, []byte(myAddr))}); err != nil {
		return 0, kx.Admission{}, cl.failed(err)
	}
	c.SetDeadline(cl.deadline)
	for {
		m, err := readMsg(c)
		if err != nil {
			if isTimeout(err) {
				return 0, kx.Admission{}, kx.Errorf(kx.CodeTimeout, "joiner: no resize of the job at %s admitted this process within %v (do its members call kylix_resize, and was the job started elastic?)", addr, timeout)
			}
			return 0, kx.Admission{}, kx.Errorf(kx.CodeNet, "joiner: the join server at %s: %v", addr, err)
		}
		switch m.Type {
		case "offer":
			if err := writeMsg(c, &message{Type: "accept", Job: m.Job}); err != nil {
				return 0, kx.Admission{}, cl.failed(err)
			}
		case "error":
			return 0, kx.Admission{}, refused(m, "the join server at %s refused this joiner: %s", addr)
		case "admitted":
			rb := fmt.Appendf(nil, "%d:", m.Rank)
			if !hmac.Equal(m.Proof, joinProof(secret, "admitted", ch.Nonce, nonce, append(rb, m.Adm...))) {
				return 0, kx.Admission{}, kx.Errorf(kx.CodeAuth, "joiner: the join server at %s failed authentication: wrong secret", addr)
			}
			var a kx.Admission
			if err := json.Unmarshal(m.Adm, &a); err != nil || m.Rank < 0 || m.Rank >= len(a.Peers) || a.Peers[m.Rank] != myAddr {
				return 0, kx.Admission{}, kx.Errorf(kx.CodeInternal, "joiner: the join server at %s sent an admission not listing this process", addr)
			}
			return m.Rank, a, nil
		}
	}
}

// Admit is the resize leader's exchange with the join server at addr (see join.go): bounded by
// the request's wait plus its liveness plus timeout.
func Admit(addr, secret string, req kx.AdmitRequest, timeout time.Duration) (kx.Admission, error) {
	cl := &client{addr: addr, rank: -2, secret: secret, timeout: timeout, deadline: time.Now().Add(timeout)}
	// One attempt: the server of a running job is up or gone (unlike start-up, where it may
	// start later), and a resize must not wait out the timeout for a dead one.
	c, err := net.DialTimeout("tcp", addr, min(timeout, challengeWait))
	if err != nil {
		return kx.Admission{}, kx.Errorf(kx.CodeNet, "the join server at %s cannot be reached: %v (a job started without kylixrun loses its join address with rank 0)", addr, err)
	}
	defer c.Close()
	ch, err := cl.challenge(c)
	if err != nil {
		return kx.Admission{}, err
	}
	body, _ := json.Marshal(req)
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if err := writeMsg(c, &message{Type: "admit", V: version, Req: body, Nonce: nonce,
		Proof: joinProof(secret, "admit", ch.Nonce, nonce, body)}); err != nil {
		return kx.Admission{}, cl.failed(err)
	}
	c.SetDeadline(time.Now().Add(req.Wait + req.Liveness + timeout))
	m, err := readMsg(c)
	if err != nil {
		return kx.Admission{}, cl.failed(err)
	}
	switch m.Type {
	case "error":
		return kx.Admission{}, refused(m, "the join server at %s: %s", addr)
	case "admission":
		if !hmac.Equal(m.Proof, joinProof(secret, "admission", ch.Nonce, nonce, m.Adm)) {
			return kx.Admission{}, kx.Errorf(kx.CodeAuth, "the join server at %s failed authentication: wrong secret", addr)
		}
		var a kx.Admission
		if err := json.Unmarshal(m.Adm, &a); err != nil {
			return kx.Admission{}, kx.Errorf(kx.CodeInternal, "the join server at %s sent a malformed admission: %v", addr, err)
		}
		return a, nil
	}
	return kx.Admission{}, kx.Errorf(kx.CodeInternal, "the join server at %s answered %q to an admit", addr, m.Type)
}

// refused words an error message from the server, keeping its code.
func refused(m *message, format, addr string) error {
	code := kx.Code(m.Code)
	if code <= kx.OK || code > kx.CodeInternal {
		code = kx.CodeAuth
	}
	return kx.Errorf(code, format, addr, m.Error)
}
