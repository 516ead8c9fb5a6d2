package netio

import (
	"bytes"
	"encoding/binary"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"strings"
	"testing"
)

// FuzzDecodeAbort: whatever a peer puts in an abort frame's payload, the rank reads a failure
// code, a blamed rank (or none) and the text, and a valid payload re-encodes to the same bytes.
func FuzzDecodeAbort(f *testing.F) {
	f.Add(encodeAbort(kx.CodeMismatch, 1, "rank 1 rejected"))
	f.Add(encodeAbort(kx.CodePeer, -1, "no rank named"))
	f.Add(encodeAbort(kx.CodeTimeout, 1<<31, "a rank the job does not have"))
	f.Add([]byte{0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 'x'})
	f.Add([]byte{byte(kx.CodeNet)})
	f.Fuzz(func(t *testing.T, b []byte) {
		var code kx.Code
		var named int
		var msg string
		fuzzcheck.Bounded(t, "decodeAbort", len(b), 2, func() { code, named, msg = decodeAbort(b) })
		if code <= kx.OK || code > kx.CodeInternal {
			t.Fatalf("code %d is not a failure", code)
		}
		if len(b) < 5 {
			if code != kx.CodeInternal || named != -1 {
				t.Fatalf("%d bytes: code %v, named %d", len(b), code, named)
			}
			return
		}
		if want := int(binary.LittleEndian.Uint32(b[1:])) - 1; named != want || msg != string(b[5:]) {
			t.Fatalf("named %d, message %q; the payload says %d, %q", named, msg, want, b[5:])
		}
		if valid := kx.Code(b[0]) > kx.OK && kx.Code(b[0]) <= kx.CodeInternal; valid != (code == kx.Code(b[0])) {
			t.Fatalf("code byte %d read as %v", b[0], code)
		} else if valid && len(b) <= maxAbortPayload && !bytes.Equal(encodeAbort(code, named, msg), b) {
			t.Fatalf("re-encoding differs from %x", b)
		}
		// The blame the peer sent is what the rank reports, as the peer's report.
		e := kx.Reported(code, msg, 3, named)
		if r, ok := e.Rank(); ok != (named >= 0) || ok && r != named {
			t.Fatalf("blames %d (%v), the frame named %d", r, ok, named)
		}
		if by, _ := e.Reporter(); by != 3 || !strings.HasSuffix(e.Error(), "(reported by rank 3)") {
			t.Fatalf("reporter %d, message %q", by, e.Error())
		}
	})
}
