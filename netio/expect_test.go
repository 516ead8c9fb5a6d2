package netio

import (
	"bytes"
	"kylix/core/kx"
	"kylix/netio/memnet"
	"runtime"
	"testing"
	"time"
)

// A posted place sits inside a larger buffer whose other bytes are sentinels: whatever a peer
// sends, only the place's bytes may change.
func sentinelPlace(n int) (whole, place []byte) {
	whole = bytes.Repeat([]byte{0xA5}, n+64)
	return whole, whole[32 : 32+n]
}

// sentinelsIntact reads the sentinels only: after a failed wait a reader may still be filling
// the place itself until the collective is quiesced (Quiesce), which a check must not race.
func sentinelsIntact(t *testing.T, whole []byte, n int) {
	t.Helper()
	for _, lo := range []int{0, 32 + n} {
		for i, b := range whole[lo:min(lo+32, len(whole))] {
			if b != 0xA5 {
				t.Fatalf("byte %d outside the posted place was written (%#x)", lo+i, b)
			}
		}
	}
}

// testExpect runs the receive-into-place cases over a job's transports: posted before the
// message, posted after it arrived (copied in), a payload of the wrong length.
func testExpect(t *testing.T, ts []kx.Transport) {
	for _, tr := range ts {
		tr.Receiver().Begin(7, fpAll)
	}
	payload := bytes.Repeat([]byte{1, 2, 3, 4, 5}, 2000)
	n := len(payload)

	// Posted first: the payload lands in place.
	whole, place := sentinelPlace(n)
	tagA := kx.Tag{FP: fpAll, Seq: 7, Layer: 0, Phase: kx.PhaseDown}
	ts[0].Receiver().Post(1, tagA, place, kx.Fold{})
	if err := ts[1].Sender().Send(0, tagA, payload[:n/2], payload[n/2:]); err != nil {
		t.Fatal(err)
	}
	if got, err := ts[0].Receiver().Await(1, tagA, kx.Whole); err != nil || got != n || !bytes.Equal(place, payload) {
		t.Fatalf("posted first: %d bytes, %v", got, err)
	}
	sentinelsIntact(t, whole, n)

	// Arrived first: copied in by Await.
	whole, place = sentinelPlace(n)
	tagB := kx.Tag{FP: fpAll, Seq: 7, Layer: 1, Phase: kx.PhaseUp}
	if err := ts[1].Sender().Send(0, tagB, payload); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ts[0].Receiver().Post(1, tagB, place, kx.Fold{})
	if got, err := ts[0].Receiver().Await(1, tagB, kx.Whole); err != nil || got != n || !bytes.Equal(place, payload) {
		t.Fatalf("arrived first: %d bytes, %v", got, err)
	}
	sentinelsIntact(t, whole, n)

	// Wrong length, longer and shorter, posted before and after: INTERNAL naming the sender,
	// and the place untouched.
	for i, size := range []int{n + 1, n - 1, n + 1000, 0} {
		for _, early := range []bool{false, true} {
			whole, place = sentinelPlace(n)
			copy(place, bytes.Repeat([]byte{0xA5}, n))
			tag := kx.Tag{FP: fpAll, Seq: 7, Layer: uint8(2 + i), Phase: kx.PhaseDown}
			if early {
				tag.Phase = kx.PhaseUp
				ts[1].Sender().Send(0, tag, bytes.Repeat([]byte{9}, size))
				time.Sleep(20 * time.Millisecond)
				ts[0].Receiver().Post(1, tag, place, kx.Fold{})
			} else {
				ts[0].Receiver().Post(1, tag, place, kx.Fold{})
				ts[1].Sender().Send(0, tag, bytes.Repeat([]byte{9}, size))
			}
			_, err := ts[0].Receiver().Await(1, tag, kx.Whole)
			wantErr(t, err, kx.CodeInternal, "rank 1 sent", "want")
			for j, b := range whole {
				if b != 0xA5 {
					t.Fatalf("size %d early %v: byte %d written", size, early, j)
				}
			}
		}
	}
}

func TestExpectMem(t *testing.T) {
	testExpect(t, memTransports(memnet.NewJob(2, 5*time.Second)))
}

func TestExpectTCP(t *testing.T) {
	base := runtime.NumGoroutine()
	ts := mustJob(t, 2, 5*time.Second)
	testExpect(t, tcpTransports(ts))
	closeAll(ts)
	noLeak(t, base)
}

// A peer that dies in the middle of a message being read into place: Await fails with PEER
// naming it, and nothing outside the place is written.
func TestExpectPeerDiesMidMessage(t *testing.T) {
	base := runtime.NumGoroutine()
	ts := mustJob(t, 2, 5*time.Second)
	defer closeAll(ts)
	for _, tr := range ts {
		tr.Receiver().Begin(3, fpAll)
	}
	const n = 4 << 20
	whole, place := sentinelPlace(n)
	tag := kx.Tag{FP: fpAll, Seq: 3, Phase: kx.PhaseDown}
	ts[0].Receiver().Post(1, tag, place, kx.Fold{})
	// Rank 1 writes a header announcing n bytes and half the payload, then its connection
	// drops, as when its process is killed mid-send.
	p := ts[1].peers[0]
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameData, Phase: tag.Phase, Job: ts[1].job, Seq: 3, FP: fpAll, Src: 1, Len: n})
	p.conn.Write(hb[:])
	p.conn.Write(bytes.Repeat([]byte{7}, n/2))
	p.conn.Close()
	var err error
	within(t, 2*time.Second, func() { _, err = ts[0].Receiver().Await(1, tag, kx.Whole) })
	wantErr(t, err, kx.CodePeer, "rank 1")
	sentinelsIntact(t, whole, n)
	closeAll(ts)
	noLeak(t, base)
}

// After a failed collective, Quiesce makes sure nothing lands in its places any more: a place a
// reader is filling is waited for (the peer is still sending it), places not yet claimed are
// withdrawn and a frame for one does not touch it.
func TestQuiesceEndsPlaces(t *testing.T) {
	ts := mustJob(t, 2, 5*time.Second)
	defer closeAll(ts)
	for _, tr := range ts {
		tr.Receiver().Begin(9, fpAll)
	}
	const n = 4 << 20
	_, filling := sentinelPlace(n)
	whole2, open := sentinelPlace(1000)
	tagA := kx.Tag{FP: fpAll, Seq: 9, Layer: 0, Phase: kx.PhaseUp}
	tagB := kx.Tag{FP: fpAll, Seq: 9, Layer: 1, Phase: kx.PhaseUp}
	ts[0].Receiver().Post(1, tagA, filling, kx.Fold{})
	ts[0].Receiver().Post(1, tagB, open, kx.Fold{})

	// Rank 1 writes the header of A and half of its payload, by hand: rank 0's reader is now
	// filling the place straight from the socket.
	p := ts[1].peers[0]
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameData, Layer: 0, Phase: tagA.Phase, Job: ts[1].job, Seq: 9, FP: fpAll, Src: 1, Len: n})
	payload := bytes.Repeat([]byte{0x11}, n)
	p.conn.Write(hb[:])
	p.conn.Write(payload[:n/2])
	time.Sleep(50 * time.Millisecond)

	done := make(chan struct{})
	go func() { ts[0].Receiver().Quiesce(9); close(done) }()
	select {
	case <-done:
		t.Fatal("Quiesce returned while a reader was still filling a place")
	case <-time.After(150 * time.Millisecond):
	}
	p.conn.Write(payload[n/2:])
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Quiesce did not return once the place was filled")
	}
	if !bytes.Equal(filling, payload) {
		t.Fatal("the place being filled did not get its payload")
	}
	// B comes after the collective's places were ended: its place stays as it was.
	if err := ts[1].Sender().Send(0, tagB, bytes.Repeat([]byte{0x22}, 1000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	sentinelsIntact(t, whole2, 0)
	if !bytes.Equal(open, bytes.Repeat([]byte{0xA5}, 1000)) {
		t.Fatal("a frame landed in a place withdrawn by Quiesce")
	}
}
