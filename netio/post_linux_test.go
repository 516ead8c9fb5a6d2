//go:build linux

package netio

import (
	"bytes"
	"testing"
	"time"

	"kylix/core/kx"
)

// Post writes a frame by reference and returns before the peer copies the payload: with the
// receiver's reads held, Post still returns and Complete does not. Once the receiver reads, the
// payload arrives whole and Complete returns; the bytes are counted once, when the send
// completes. A message too small to go by reference is sent as Send sends it: complete at once.
func TestPostReturnsBeforeThePeersCopy(t *testing.T) {
	ts := startShmJob(t, 2, "auto")
	defer closeAll(ts)
	const seq = 7
	for _, tr := range ts {
		tr.Receiver().Begin(seq, fpAll)
	}
	tag := kx.Tag{FP: fpAll, Seq: seq, Phase: kx.PhaseDown}
	large := bytes.Repeat([]byte{7}, refMin+4096)
	release := holdReads(ts[1])
	ps, err := ts[0].Post(1, tag, large[:1000], large[1000:])
	if err != nil || ps.Mark == 0 || ps.Rank != 1 || ps.N != len(large) {
		release()
		t.Fatalf("Post = %+v, %v; want a posted frame of %d bytes to rank 1", ps, err, len(large))
	}
	if sent := ts[0].Stats()[1].BytesSent; sent != 0 {
		t.Errorf("%d bytes counted sent before the copy", sent)
	}
	done := make(chan error, 1)
	go func() { done <- ts[0].Complete(ps) }()
	select {
	case err := <-done:
		release()
		t.Fatalf("Complete returned (%v) while the receiver read nothing", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	got, err := ts[1].Receiver().Recv(0, tag)
	if err != nil || !bytes.Equal(got, large) {
		t.Fatalf("Recv: %d bytes, %v; want the %d posted", len(got), err, len(large))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return after the receiver copied the payload")
	}
	if sent := ts[0].Stats()[1].BytesSent; sent != uint64(len(large)) {
		t.Errorf("%d bytes counted sent, want %d", sent, len(large))
	}

	small := []byte("forty bytes or so, well under refMin...")
	tag.Layer = 1
	ps, err = ts[0].Post(1, tag, small)
	if err != nil || ps.Mark != 0 {
		t.Fatalf("Post of %d bytes = %+v, %v; want a complete send", len(small), ps, err)
	}
	if err := ts[0].Complete(ps); err != nil {
		t.Fatalf("Complete of a complete send: %v", err)
	}
	if got, err := ts[1].Receiver().Recv(0, tag); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("Recv of the small post: %q, %v", got, err)
	}
}
