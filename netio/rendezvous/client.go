package rendezvous

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"io"
	"kylix/core/kx"
	"net"
	"strconv"
	"time"
)

// Lookup registers rank (listening at myAddr) with the rendezvous server at addr and waits for
// the table and the job id. A myAddr with no host (":port") or an unspecified one advertises the
// local address of the connection to the server. Bounded by timeout overall.
func Lookup(addr string, rank, size int, myAddr, secret string, timeout time.Duration) ([]string, uint64, error) {
	cl := &client{addr: addr, rank: rank, secret: secret, timeout: timeout,
		deadline: time.Now().Add(timeout)}
	c, err := cl.dial()
	if err != nil {
		return nil, 0, err
	}
	kept := false
	defer func() {
		if !kept {
			c.Close()
		}
	}()
	ch, err := cl.challenge(c)
	if err != nil {
		return nil, 0, err
	}
	myAddr, err = advertised(c, myAddr)
	if err != nil {
		return nil, 0, err
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	reg := &message{Type: "register", V: version, Rank: rank, Size: size, Addr: myAddr, Nonce: nonce,
		Proof: registerProof(secret, ch.Nonce, nonce, rank, size, myAddr)}
	if err := writeMsg(c, reg); err != nil {
		return nil, 0, cl.failed(err)
	}
	t, err := cl.table(c)
	if err != nil {
		return nil, 0, err
	}
	if !hmac.Equal(t.Proof, tableProof(secret, ch.Nonce, nonce, t.Job, t.Peers)) {
		return nil, 0, kx.Errorf(kx.CodeAuth, "rank %d: the rendezvous at %s failed authentication: wrong secret", rank, addr)
	}
	if len(t.Peers) != size || t.Peers[rank] != myAddr {
		return nil, 0, kx.Errorf(kx.CodeInternal, "rank %d: the rendezvous sent a table of %d ranks not listing this rank", rank, len(t.Peers))
	}
	kept = true
	keepCauseLine(c)
	return t.Peers, t.Job, nil
}

// client is one rank's lookup in progress.
type client struct {
	addr     string
	rank     int
	secret   string
	timeout  time.Duration
	deadline time.Time
}

// who names the client in messages: its rank, or "joiner" (joinclient.go).
func (cl *client) who() string {
	switch cl.rank {
	case -1:
		return "joiner"
	case -2:
		return "resize leader"
	}
	return "rank " + strconv.Itoa(cl.rank)
}

// dial reaches the server, retrying with backoff (it may start later) until the deadline.
func (cl *client) dial() (net.Conn, error) {
	backoff := 10 * time.Millisecond
	for {
		d := net.Dialer{Deadline: cl.deadline}
		c, err := d.Dial("tcp", cl.addr)
		if err == nil {
			return c, nil
		}
		var dns *net.DNSError
		if errors.As(err, &dns) && dns.IsNotFound {
			return nil, kx.Errorf(kx.CodeNet, "%s cannot resolve the rendezvous address %s: %v", cl.who(), cl.addr, err)
		}
		wait := min(backoff, time.Until(cl.deadline))
		if wait <= 0 {
			return nil, kx.Errorf(kx.CodeTimeout, "%s could not reach the rendezvous at %s within %v: %v", cl.who(), cl.addr, cl.timeout, err)
		}
		time.Sleep(wait)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// failed words an I/O error with the server.
func (cl *client) failed(err error) error {
	if isTimeout(err) {
		return kx.Errorf(kx.CodeTimeout, "%s: the rendezvous at %s did not answer within %v", cl.who(), cl.addr, cl.timeout)
	}
	return kx.Errorf(kx.CodeNet, "%s: rendezvous at %s: %v", cl.who(), cl.addr, err)
}

// challenge reads the server's first message. A rendezvous sends its challenge as soon as it
// accepts: a port that answers otherwise, or not at all, is taken by another program, which is
// said at once, not after timeout.
func (cl *client) challenge(c net.Conn) (*message, error) {
	first := time.Now().Add(challengeWait)
	if cl.deadline.Before(first) {
		first = cl.deadline
	}
	c.SetDeadline(first)
	ch, err := readMsg(c)
	if err != nil {
		var bad *badMessage
		switch {
		case errors.As(err, &bad):
			return nil, kx.Errorf(kx.CodeNet, "%s: %s is not a Kylix rendezvous (%v): is the port taken by another program?", cl.who(), cl.addr, err)
		case isTimeout(err):
			return nil, kx.Errorf(kx.CodeNet, "%s: the process at %s accepted the connection but sent no rendezvous challenge within %v: is the port taken by another program?", cl.who(), cl.addr, min(cl.timeout, challengeWait))
		}
		return nil, cl.failed(err)
	}
	c.SetDeadline(cl.deadline)
	if ch.Type != "challenge" || ch.V != version {
		return nil, kx.Errorf(kx.CodeAuth, "%s: the rendezvous at %s speaks another protocol (version %d, this process %d)", cl.who(), cl.addr, ch.V, version)
	}
	return ch, nil
}

// advertised is the address the rank registers: myAddr, or with no host or an unspecified one,
// the local address of its connection to the server.
func advertised(c net.Conn, myAddr string) (string, error) {
	host, port, err := net.SplitHostPort(myAddr)
	if err != nil {
		return "", kx.Errorf(kx.CodeArg, "rendezvous: own address %q is not host:port", myAddr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		myAddr = net.JoinHostPort(c.LocalAddr().(*net.TCPAddr).IP.String(), port)
	}
	return myAddr, nil
}

// table waits for the table message; shortly before giving up, it asks who is still missing so
// the timeout can name them.
func (cl *client) table(c net.Conn) (*message, error) {
	margin := min(cl.timeout/4, time.Second)
	c.SetReadDeadline(cl.deadline.Add(-margin))
	asked := false
	var missing []int
	for {
		m, err := readMsg(c)
		if err != nil {
			if isTimeout(err) && !asked {
				asked = true
				c.SetDeadline(cl.deadline)
				if writeMsg(c, &message{Type: "status?"}) == nil {
					continue
				}
			}
			return nil, cl.tableFailed(err, missing)
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
			return nil, kx.Errorf(code, "the rendezvous at %s refused rank %d: %s", cl.addr, cl.rank, m.Error)
		case "table":
			return m, nil
		}
	}
}

// tableFailed words a wait for the table that ended with err, naming the ranks still missing
// when the server said.
func (cl *client) tableFailed(err error, missing []int) error {
	switch {
	case isTimeout(err) && missing != nil:
		return kx.Errorf(kx.CodeTimeout, "rank %d timed out after %v at the rendezvous %s: ranks %v have not registered", cl.rank, cl.timeout, cl.addr, missing)
	case isTimeout(err):
		return kx.Errorf(kx.CodeTimeout, "rank %d timed out after %v at the rendezvous %s waiting for the other ranks", cl.rank, cl.timeout, cl.addr)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return kx.Errorf(kx.CodeNet, "rank %d: the rendezvous at %s hung up (it serves one job; was it already served?)", cl.rank, cl.addr)
	}
	return cl.failed(err)
}
