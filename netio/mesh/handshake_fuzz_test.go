package mesh

import (
	"bytes"
	"io"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"strings"
	"testing"
	"time"
)

const (
	fuzzSecret = "fuzz-secret-a7c1e9"
	sha256Size = 32
)

// peerConn plays the peer of a handshake from a script: the peer's hello is the script's first
// helloSize bytes; its proof is the correct one when prove is set (so the checks after the
// proofs are reached), else the script's other bytes. What the rank writes is kept.
type peerConn struct {
	fuzzcheck.ConnStub
	script []byte
	prove  bool
	dial   bool // the rank under test dials
	read   int
	proof  []byte
	out    bytes.Buffer
}

func (c *peerConn) Read(b []byte) (int, error) {
	if c.read == helloSize && c.proof == nil {
		// The rank read the hello and sent its own proof (it proves first): the peer's now.
		c.proof = c.script[helloSize:]
		if c.prove && c.out.Len() >= helloSize {
			me, _ := decodeHello(c.out.Bytes()[:helloSize])
			them, _ := decodeHello(c.script[:helloSize])
			label, d, a := "acceptor", &me, &them
			if !c.dial {
				label, d, a = "dialer", &them, &me
			}
			c.proof = handshakeProof(fuzzSecret, label, d, a)
		}
	}
	var src []byte
	if c.read < helloSize {
		src = c.script[min(c.read, len(c.script)):min(len(c.script), helloSize)]
	} else {
		src = c.proof[c.read-helloSize:]
	}
	if len(src) == 0 {
		return 0, io.EOF
	}
	n := copy(b, src)
	c.read += n
	return n, nil
}

func (c *peerConn) Write(b []byte) (int, error) { return c.out.Write(b) }

const fuzzJob = 0x0123456789abcdef

// FuzzHandshake: whatever a peer sends in the handshake (its hello, then its proof or the
// correct proof), the rank accepts exactly the peers the rules admit (same version, job and
// size; a dialer the rank it called, an acceptor a higher rank), returns what their hello said,
// refuses the others with an error naming them, and never sends the secret.
func FuzzHandshake(f *testing.F) {
	for _, r := range []int{1, 2, 3, -1, 4} {
		h := hello{version: ProtocolVersion, flags: helloShm, job: fuzzJob, rank: r, size: 4}
		f.Add(h.encode(), true, true)
		f.Add(h.encode(), false, true)
		f.Add(append(h.encode(), make([]byte, sha256Size)...), false, false)
	}
	for _, h := range []hello{{version: ProtocolVersion - 1, job: fuzzJob, rank: 2, size: 4},
		{version: ProtocolVersion, job: fuzzJob + 1, rank: 2, size: 4}, {version: ProtocolVersion, job: fuzzJob, rank: 2, size: 5}} {
		f.Add(h.encode(), false, true)
	}
	f.Add(bytes.Repeat([]byte{0xee}, helloSize), true, true)
	f.Add([]byte("KYLH"), true, false)
	f.Fuzz(func(t *testing.T, script []byte, dial, prove bool) {
		rank, peer := 1, -1
		if dial {
			rank, peer = 2, 1
		}
		c := &peerConn{script: script, prove: prove, dial: dial}
		var got int
		var flags uint8
		var err error
		fuzzcheck.Bounded(t, "handshake", len(script), 2, func() {
			got, flags, err = handshake(c, dial, rank, 4, peer, fuzzJob, fuzzSecret, time.Second, 0)
		})
		var them hello
		derr := io.ErrUnexpectedEOF
		if len(script) >= helloSize {
			them, derr = decodeHello(script[:helloSize])
		}
		accept := prove && derr == nil && them.version == ProtocolVersion && them.job == fuzzJob && them.size == 4 &&
			(dial && them.rank == peer || !dial && them.rank > rank && them.rank < 4)
		switch {
		case accept != (err == nil):
			t.Fatalf("peer hello %+v (decode: %v), proved %v: handshake says %v", them, derr, prove, err)
		case err == nil && (got != them.rank || flags != them.flags):
			t.Fatalf("returned rank %d flags %d, the hello says %d %d", got, flags, them.rank, them.flags)
		case err != nil:
			if code := kx.CodeOf(err); code != kx.CodeAuth && code != kx.CodeNet {
				t.Fatalf("code %v: %v", code, err)
			}
			who := "a peer"
			if dial {
				who = "rank 1"
			} else if derr == nil && c.read > 0 && len(script) >= helloSize {
				who = rankName(them.rank)
			}
			if !strings.Contains(err.Error(), who) {
				t.Fatalf("error does not name %s: %v", who, err)
			}
		}
		if out := c.out.Bytes(); bytes.Contains(out, []byte(fuzzSecret)) || len(out) > helloSize+sha256Size {
			t.Fatalf("the rank sent %d bytes, the secret among them: %v", len(out), bytes.Contains(out, []byte(fuzzSecret)))
		}
	})
}

// FuzzDecodeHello: a hello with the magic decodes to the fields that re-encode to the same
// bytes (the two reserved bytes aside); anything else is refused.
func FuzzDecodeHello(f *testing.F) {
	f.Add((&hello{version: ProtocolVersion, flags: helloShm, job: fuzzJob, rank: 3, size: 8}).encode())
	f.Add((&hello{version: 1, rank: -1, size: -1}).encode())
	f.Add(bytes.Repeat([]byte{0xff}, helloSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append(b, make([]byte, helloSize)...)[:helloSize] // the handshake reads exactly helloSize
		h, err := decodeHello(b)
		if (err == nil) != (string(b[:4]) == "KYLH") {
			t.Fatalf("magic %q: %v", b[:4], err)
		}
		if err != nil {
			return
		}
		want := bytes.Clone(b)
		want[6], want[7] = 0, 0
		if got := h.encode(); !bytes.Equal(got, want) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", got, want)
		}
		if again, err := decodeHello(h.encode()); err != nil || again != h {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", h, again, err)
		}
	})
}
