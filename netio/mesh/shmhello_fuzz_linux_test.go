package mesh

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecodeShmHello: what a peer sends as its shared-memory hello decodes only with the magic
// and version 1, re-encodes to the same bytes (the reserved ones aside), and the pair is matched
// for shared memory only on the same host identity and user.
func FuzzDecodeShmHello(f *testing.F) {
	me, err := myShmHello()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(me.encode())
	other := me
	other.uid++
	f.Add(other.encode())
	other = me
	other.host[0] ^= 1
	f.Add(other.encode())
	f.Add((&shmHello{}).encode())
	f.Add([]byte("KYSM\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append(b, make([]byte, shmHelloSize)...)[:shmHelloSize] // negotiateShm reads exactly this
		them, err := decodeShmHello(b)
		if (err == nil) != (string(b[:5]) == "KYSM\x01") {
			t.Fatalf("magic and version %q: %v", b[:5], err)
		}
		if err != nil {
			return
		}
		want := bytes.Clone(b)
		want[5], want[6], want[7] = 0, 0, 0
		if got := them.encode(); !bytes.Equal(got, want) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", got, want)
		}
		if again, err := decodeShmHello(them.encode()); err != nil || again != them {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", them, again, err)
		}
		ok, sameHost, why := shmMatch(me, them)
		switch {
		case sameHost != (them.host == me.host):
			t.Fatalf("same host %v for host %x, this rank's %x", sameHost, them.host, me.host)
		case ok != (sameHost && them.uid == me.uid):
			t.Fatalf("match %v for uid %d, this rank's %d", ok, them.uid, me.uid)
		case !ok && sameHost && !strings.Contains(why, "another user"):
			t.Fatalf("refused for %q", why)
		}
	})
}
