//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

// The peer at the other end of a segment is a process of the same user: it can write anything
// into the ring it writes, the check words included (it can read the key). FuzzRingReader plays
// that peer. Its input lays out frames as the peer wants them: each record gives a frame's length
// word, whether its check word is right (and says whole or streaming) or garbage, and payload
// bytes, and the input ends with where the tail is published. The reader must return frames or
// an error, within its deadline; never crash, and never write a byte outside the place it is
// given.
//
// Record: flags (bit 0: a right check word, bit 1: whole), the length word (8 bytes), the
// payload's bytes in the ring (1 byte, then as many bytes).

const fuzzGuard = 16

func FuzzRingReader(f *testing.F) {
	rec := func(flags byte, n uint64, payload []byte) []byte {
		b := append([]byte{flags}, binary.LittleEndian.AppendUint64(nil, n)...)
		return append(append(b, byte(len(payload))), payload...)
	}
	tail := func(d uint16) []byte { return binary.LittleEndian.AppendUint16(nil, d) }
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	// Seeds: good frames, a length past the ring, past MaxFrame, a garbage check word, a frame
	// that says it streams while the tail stays behind, a tail far ahead, and raw bytes.
	f.Add(cat(rec(3, 5, []byte("hello")), rec(3, 0, nil), tail(0x8000)))
	f.Add(cat(rec(3, 1<<20, []byte("big")), tail(0x8000)))
	f.Add(cat(rec(3, 1<<50, nil), tail(0x8000)))
	f.Add(cat(rec(2, 5, []byte("hello")), tail(0x8000)))
	f.Add(cat(rec(1, 300, []byte("streams")), tail(0x8000+16)))
	f.Add(cat(rec(1, 300, []byte("streams")), tail(0xffff)))
	f.Add(cat(rec(3, 40, []byte("short of its length")), rec(3, 7, []byte("next")), tail(0x8000)))
	f.Add([]byte("\x03\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00\x80"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := pair(t, MinRing, Options{Poll: time.Millisecond})
		w, r := &a.w, &b.r
		pos := uint64(0)
		var want [][]byte // the frames laid out well, up to the first that is not
		good := true
		for len(in) >= 10 && pos+prefix <= w.size {
			flags, n, k := in[0], binary.LittleEndian.Uint64(in[1:9]), int(in[9])
			in = in[10:]
			k = min(k, len(in))
			if pos+prefix+pad16(uint64(k)) > w.size {
				break // its payload would wrap over the frames laid out before it
			}
			off := pos & w.mask
			c := binary.LittleEndian.Uint64(append(in[:k:k], make([]byte, 8)...)) // garbage: payload bytes
			if flags&1 != 0 {
				c = w.check(pos, n, flags&2 != 0)
			}
			w.word(off + 8).Store(n)
			w.word(off).Store(c)
			for i := 0; i < k; i++ {
				w.data[(off+prefix+uint64(i))&w.mask] = in[i]
			}
			if good = good && flags&3 == 3 && n == uint64(k); good {
				want = append(want, in[:k:k])
			}
			in = in[k:]
			pos += prefix + pad16(uint64(k))
		}
		d := uint64(0x8000)
		if len(in) >= 2 {
			d = uint64(binary.LittleEndian.Uint16(in))
		}
		w.tail.Store(pos + d - 0x8000) // behind, at or ahead of what was laid out
		got := readAll(t, r)
		if len(got) < len(want) {
			t.Fatalf("read %d frames, %d were laid out well", len(got), len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("frame %d: read %q, laid out %q", i, got[i], want[i])
			}
		}
	})
}

// readAll reads frames until an error, each into a place with guard bytes on both sides, and
// returns them.
func readAll(t *testing.T, r *Reader) (got [][]byte) {
	deadline := time.Now().Add(2 * time.Second) // a fail-safe; each call's own bound is shorter
	for frames := 0; frames < 64; frames++ {
		wt := Wait{Deadline: time.Now().Add(5 * time.Millisecond)}
		n, err := r.Next(wt)
		if err != nil {
			checkErr(t, err)
			return got
		}
		if n > MaxFrame {
			t.Fatalf("Next returned length %d", n)
		}
		k := min(n, 4*MinRing)
		buf := make([]byte, k+2*fuzzGuard)
		for i := range buf {
			buf[i] = 0xa5
		}
		err = r.ReadFull(wt, buf[fuzzGuard:fuzzGuard+k])
		for i := 0; i < fuzzGuard; i++ {
			if buf[i] != 0xa5 || buf[len(buf)-1-i] != 0xa5 {
				t.Fatalf("a byte outside the place was written (frame of %d bytes)", n)
			}
		}
		if err != nil {
			checkErr(t, err)
			return got
		}
		got = append(got, buf[fuzzGuard:fuzzGuard+k])
		if time.Now().After(deadline) {
			t.Fatal("the reader kept returning frames past its bound")
		}
	}
	return got
}

// checkErr accepts the errors a corrupted ring may give: a bad segment, a timeout waiting for
// bytes the peer never published, or the end of the stream.
func checkErr(t *testing.T, err error) {
	switch {
	case errors.Is(err, ErrBadSegment), errors.Is(err, ErrTimeout), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
	default:
		t.Fatalf("unexpected error from a corrupted ring: %v", err)
	}
}
