package rendezvous

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"net"
	"sync"
	"testing"
	"time"
)

// frame is m as it travels: the 4-byte length, then the JSON.
func frame(m *message) []byte {
	var b bytes.Buffer
	writeMsg(&b, m)
	return b.Bytes()
}

// FuzzReadMsg: whatever a stranger sends to the rendezvous (or the join port, or a rank's cause
// line), readMsg returns a message that re-encodes to itself, consuming exactly the bytes its
// length announced, or a clean error (the stream ended, or a badMessage); and it allocates in
// proportion to the bytes that arrived, not to the length they announce.
func FuzzReadMsg(f *testing.F) {
	for _, m := range []*message{
		{Type: "challenge", V: version, Nonce: make([]byte, 32)},
		{Type: "register", V: version, Rank: 3, Size: 4, Addr: "127.0.0.1:5000", Nonce: []byte{1, 2}, Proof: make([]byte, 32)},
		{Type: "table", Peers: []string{"a:1", "b:2"}, Job: 1 << 63},
		{Type: "status", Missing: []int{0, 2}},
		{Type: "error", Code: int(kx.CodeAuth), Error: "wrong secret"},
		{Type: "cause", Code: int(kx.CodePeer), Error: "kylix_reduce: rank 2 died", Rank: 2},
		{Type: "join", V: version, Addr: "10.0.0.1:7"},
		{Type: "admit", V: version, Req: json.RawMessage(`{"Members":["a:1",""],"Prev":[0,1],"Replication":2}`)},
		{Type: "admitted", Rank: 1, Adm: json.RawMessage(`{"Peers":["a:1","b:2"],"Prev":[0,-1]}`)},
	} {
		f.Add(frame(m))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0x00})                   // 16 MiB announced, nothing sent
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))      // a stranger's protocol
	f.Add(append([]byte{5, 0, 0, 0}, []byte(`{"ty`)...))    // cut short
	f.Add(append([]byte{7, 0, 0, 0}, []byte(`[1,2,3]`)...)) // JSON, not a message
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		var m *message
		var err error
		fuzzcheck.Bounded(t, "readMsg", len(data), 64, func() { m, err = readMsg(r) })
		if err != nil {
			var bad *badMessage
			switch {
			case errors.Is(err, io.EOF) && len(data) != 0:
				t.Fatalf("EOF after %d bytes", len(data))
			case errors.Is(err, io.ErrUnexpectedEOF):
				if len(data) >= 4 && uint64(len(data)) >= 4+uint64(binary.LittleEndian.Uint32(data)) {
					t.Fatalf("cut short, with all %d bytes there", len(data))
				}
			case errors.As(err, &bad):
				if bad.why == "" {
					t.Fatal("a bad message without a reason")
				}
			case !errors.Is(err, io.EOF):
				t.Fatalf("unexpected error %T: %v", err, err)
			}
			return
		}
		if n := binary.LittleEndian.Uint32(data); n > maxMessage || r.Len() != len(data)-4-int(n) {
			t.Fatalf("read %d bytes of a message announcing %d", len(data)-r.Len(), n)
		}
		once := frame(m)
		m2, err := readMsg(bytes.NewReader(once))
		if err != nil {
			t.Fatalf("a message read does not read again: %v", err)
		}
		if twice := frame(m2); !bytes.Equal(once, twice) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", once[4:], twice[4:])
		}
	})
}

const (
	fuzzSecret = "rv-fuzz-secret"
	fuzzWait   = time.Millisecond // what a proved admit may wait for joiners (none come)
)

// clientConn plays a client of one server connection from a script of messages: the server's
// writes are kept, its reads get the script. With prove set, the script's register, join and
// admit messages get the correct proof for the challenge the server sent (and an admit's wait
// is cut to fuzzWait), so the fuzzer reaches what a client with the secret reaches.
type clientConn struct {
	fuzzcheck.ConnStub
	script []byte
	prove  bool
	in     *bytes.Reader
	proved [][]byte // the client nonces of the messages proved
	mu     sync.Mutex
	out    bytes.Buffer
}

func (c *clientConn) Read(b []byte) (int, error) {
	if c.in == nil {
		c.in = bytes.NewReader(c.patch())
	}
	return c.in.Read(b)
}

// patch proves the script's messages with the nonce of the challenge the server wrote.
func (c *clientConn) patch() []byte {
	if !c.prove {
		return c.script
	}
	c.mu.Lock()
	ch, err := readMsg(bytes.NewReader(c.out.Bytes()))
	c.mu.Unlock()
	if err != nil {
		return c.script
	}
	var out []byte
	r := bytes.NewReader(c.script)
	for r.Len() > 0 {
		at := len(c.script) - r.Len()
		m, err := readMsg(r)
		if err != nil {
			return append(out, c.script[at:]...) // the garbage goes as it is
		}
		switch m.Type {
		case "register":
			m.Proof = registerProof(fuzzSecret, ch.Nonce, m.Nonce, m.Rank, m.Size, m.Addr)
		case "join":
			m.Proof = joinProof(fuzzSecret, "join", ch.Nonce, m.Nonce, []byte(m.Addr))
		case "admit":
			var req kx.AdmitRequest
			if json.Unmarshal(m.Req, &req) == nil {
				req.Wait, req.Liveness = min(req.Wait, fuzzWait), min(req.Liveness, fuzzWait)
				m.Req, _ = json.Marshal(req)
			}
			m.Proof = joinProof(fuzzSecret, "admit", ch.Nonce, m.Nonce, m.Req)
		default:
			out = append(out, frame(m)...)
			continue
		}
		c.proved = append(c.proved, m.Nonce)
		out = append(out, frame(m)...)
	}
	return out
}

func (c *clientConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}

// FuzzServe: whatever one connection sends the rendezvous server (registration, status
// questions, causes, joins, admits, garbage), with or without the secret, the server ends the
// exchange when the stream ends, answers only with well-formed messages of its protocol
// (errors with a failure code and a reason), sends a table only of the job's size and proved
// for that client, and a client without the secret changes nothing: no registration, no
// joiner, no cause.
func FuzzServe(f *testing.F) {
	reg := func(rank, size int) *message {
		return &message{Type: "register", V: version, Rank: rank, Size: size, Addr: "127.0.0.1:4000", Nonce: []byte("client nonce")}
	}
	cause := &message{Type: "cause", Code: int(kx.CodePeer), Error: "rank 1 died", Rank: 1}
	join := &message{Type: "join", V: version, Addr: "127.0.0.1:4001", Nonce: []byte("joiner nonce")}
	admit := &message{Type: "admit", V: version, Nonce: []byte("leader nonce"),
		Req: json.RawMessage(`{"Members":["a:1","b:2"],"Prev":[0,1],"Replication":1}`)}
	cat := func(ms ...*message) []byte {
		var b []byte
		for _, m := range ms {
			b = append(b, frame(m)...)
		}
		return b
	}
	for _, size := range []uint8{0, 1} {
		f.Add(cat(reg(0, int(size)+1), cause, &message{Type: "status?"}), size, true)
		f.Add(cat(reg(1, 2), &message{Type: "status?"}), size, true)
		f.Add(cat(join, &message{Type: "accept", Job: 1}), size, true)
		f.Add(cat(admit), size, true)
		f.Add(cat(reg(0, 1), cause), size, false)
	}
	f.Add(cat(&message{Type: "register", V: version + 1}), uint8(0), true)
	f.Add([]byte("\xff\xff\xff\x00garbage"), uint8(0), true)
	f.Fuzz(func(t *testing.T, script []byte, size uint8, prove bool) {
		s := &Server{size: 1 + int(size%3), secret: fuzzSecret, timeout: time.Second,
			regs: map[int]*registration{}, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
		c := &clientConn{script: script, prove: prove}
		fuzzcheck.Bounded(t, "serve", len(script), 256, func() {
			s.wg.Add(1)
			ended := make(chan struct{})
			go func() { s.serve(c); close(ended) }()
			select {
			case <-ended:
			case <-time.After(10 * time.Second): // fail-safe: a served script takes microseconds
				t.Fatal("the server did not end the exchange when the stream ended")
			}
			s.wg.Wait() // a table's sends
		})
		c.mu.Lock()
		out := bytes.NewReader(c.out.Bytes())
		c.mu.Unlock()
		ch, err := readMsg(out)
		if err != nil || ch.Type != "challenge" || ch.V != version || len(ch.Nonce) != 32 {
			t.Fatalf("first message %+v, %v", ch, err)
		}
		for out.Len() > 0 {
			m, err := readMsg(out)
			if err != nil {
				t.Fatalf("the server wrote a message that does not read: %v", err)
			}
			switch m.Type {
			case "error":
				if code := kx.Code(m.Code); code <= kx.OK || code > kx.CodeInternal || m.Error == "" {
					t.Fatalf("error with code %d and reason %q", m.Code, m.Error)
				}
			case "table":
				if len(m.Peers) != s.size || !c.provedTable(ch.Nonce, m) {
					t.Fatalf("a table of %d ranks for a job of %d, or not proved for this client", len(m.Peers), s.size)
				}
			case "status", "ack", "admission":
			default:
				t.Fatalf("the server wrote a %q message", m.Type)
			}
			if !prove && m.Type != "error" && m.Type != "status" {
				t.Fatalf("a client without the secret got a %q", m.Type)
			}
		}
		if !prove && (len(s.regs) > 0 || len(s.Causes()) > 0 || len(s.Waiting()) > 0 || s.served) {
			t.Fatalf("a client without the secret changed the server: %d registered, %d causes, %d joiners", len(s.regs), len(s.Causes()), len(s.Waiting()))
		}
	})
}

// provedTable says whether table m carries the proof for one of the client's proved nonces.
func (c *clientConn) provedTable(serverNonce []byte, m *message) bool {
	for _, n := range c.proved {
		if hmac.Equal(m.Proof, tableProof(fuzzSecret, serverNonce, n, m.Job, m.Peers)) {
			return true
		}
	}
	return false
}
