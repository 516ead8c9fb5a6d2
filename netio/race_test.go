package netio

import (
	"bytes"
	"kylix/core/kx"
	"runtime"
	"testing"
	"time"
)

// Ranks 1 and 2 are the two replicas of node 1 (rank 0 is node 0, rank 3 node 0's other
// replica, unused here): their copies of a message race to rank 0.
var raceGroups = []int{0, 1, 1, 0}

// raceJob starts the 4 ranks over loopback, their data through rings (shm "auto"), sockets
// ("off"), or whatever the default gives ("").
func raceJob(t *testing.T, shm string) []*TCP {
	var ts []*TCP
	if shm == "" {
		ts = mustJob(t, 4, 5*time.Second)
	} else {
		ts = startShmJob(t, 4, shm)
	}
	for _, tr := range ts {
		if err := tr.SetReplicaGroups(raceGroups); err != nil {
			t.Fatal(err)
		}
		tr.Receiver().Begin(5, fpAll)
	}
	return ts
}

// writeHalf writes a racing frame header announcing n bytes from rank `from` to rank 0, then
// half of payload, then drops the connection: a replica killed in the middle of its copy.
func writeHalf(ts []*TCP, from int, tag kx.Tag, payload []byte) {
	p := ts[from].peers[0]
	var hb [HeaderSize]byte
	EncodeHeader(hb[:], &Header{Type: FrameData, Layer: tag.Layer, Phase: tag.Phase | raceBit, Job: ts[from].job,
		Seq: tag.Seq, FP: fpAll, Src: from, Len: uint64(len(payload))})
	p.conn.Write(hb[:])
	p.conn.Write(payload[:len(payload)/2])
	p.conn.Close()
}

// The first copy to complete wins, whichever replica it comes from; a copy cut off halfway by
// its sender's death costs nothing; later copies are dropped and counted; only the posted
// place is written.
func TestRacingCopies(t *testing.T) {
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) { racingCopies(t, shm) })
	}
}

func racingCopies(t *testing.T, shm string) {
	base := runtime.NumGoroutine()
	ts := raceJob(t, shm)
	defer closeAll(ts)
	const n = 3<<20 + 17 // several racing chunks, not a multiple of one
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i*7 + i>>11)
	}

	// Both replicas send whole copies, posted before: one wins, the other is dropped.
	whole, place := sentinelPlace(n)
	tag := kx.Tag{FP: fpAll, Seq: 5, Layer: 0, Phase: kx.PhaseDown, Race: true}
	ts[0].Receiver().Post(1, tag, place, kx.Fold{})
	errs := make(chan error, 2)
	for _, r := range []int{1, 2} {
		go func() { errs <- ts[r].Send(0, tag, payload) }()
	}
	var got int
	var err error
	within(t, 5*time.Second, func() { got, err = ts[0].Receiver().Await(2, tag, kx.Whole) }) // either replica's rank names the node
	if err != nil || got != n || !bytes.Equal(place, payload) {
		t.Fatalf("two whole copies: %d bytes, %v, equal %v", got, err, bytes.Equal(place, payload))
	}
	sentinelsIntact(t, whole, n)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	// Recv (no post): one copy buffered, the other dropped.
	tagR := kx.Tag{FP: fpAll, Seq: 5, Layer: 1, Phase: kx.PhaseConfig, Race: true}
	for _, r := range []int{2, 1} {
		if err := ts[r].Send(0, tagR, payload[:1000]); err != nil {
			t.Fatal(err)
		}
	}
	var b []byte
	within(t, 5*time.Second, func() { b, err = ts[0].Receiver().Recv(1, tagR) })
	if err != nil || !bytes.Equal(b, payload[:1000]) {
		t.Fatalf("recv: %d bytes, %v", len(b), err)
	}

	// A key that carries several messages in one collective (the link probes' agreement):
	// the i-th copy from either replica is message i, in order.
	tagK := kx.Tag{FP: fpAll, Seq: 5, Layer: 9, Phase: kx.PhaseSmall, Race: true}
	for _, r := range []int{1, 2} {
		for i := range 3 {
			if err := ts[r].Send(0, tagK, []byte{byte(i), byte(r)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 3 {
		within(t, 5*time.Second, func() { b, err = ts[0].Receiver().Recv(1, tagK) })
		if err != nil || len(b) != 2 || b[0] != byte(i) {
			t.Fatalf("message %d of a repeated key: %v, %v", i, b, err)
		}
	}

	// Replica 1 dies halfway through its copy, before replica 2's copy arrives: replica 2's
	// copy completes the place, which replica 1's half had begun to fill.
	whole, place = sentinelPlace(n)
	tagH := kx.Tag{FP: fpAll, Seq: 5, Layer: 2, Phase: kx.PhaseUp, Race: true}
	ts[0].Receiver().Post(1, tagH, place, kx.Fold{})
	writeHalf(ts, 1, tagH, payload)
	time.Sleep(50 * time.Millisecond)
	if err := ts[2].Send(0, tagH, payload); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, func() { got, err = ts[0].Receiver().Await(1, tagH, kx.Whole) })
	if err != nil || got != n || !bytes.Equal(place, payload) {
		t.Fatalf("after a replica died mid-copy: %d bytes, %v, equal %v", got, err, bytes.Equal(place, payload))
	}
	sentinelsIntact(t, whole, n)

	// With both replicas of node 1 gone, a wait for node 1 fails naming both.
	tagD := kx.Tag{FP: fpAll, Seq: 5, Layer: 3, Phase: kx.PhaseUp, Race: true}
	ts[2].Close()
	within(t, 5*time.Second, func() { _, err = ts[0].Receiver().Recv(1, tagD) })
	wantErr(t, err, kx.CodePeer, "ranks 1 and 2")

	st := ts[0].Peers().RaceStats()
	won := st[1].CopiesWon + st[2].CopiesWon
	lost := st[1].CopiesLost + st[2].CopiesLost
	if won != 6 || lost != 5 || st[1].DupBytes+st[2].DupBytes < 1000 {
		t.Errorf("race stats %+v: want 6 won, 5 lost (a whole copy, a recv copy, 3 small ones), duplicate bytes counted", st)
	}
	closeAll(ts)
	noLeak(t, base)
}

// A replica that does not read (here: its reader is held up) costs the sender only the wait
// for another replica's copy: SendOrLeave returns when told to leave, the rest of the frame
// is copied and written in the background, later frames queue behind it in order, and the
// slow replica gets every byte once it reads again.
func TestSendOrLeaveSlowReplica(t *testing.T) {
	for _, shm := range []string{"auto", "off"} {
		t.Run("shm="+shm, func(t *testing.T) { sendOrLeaveSlowReplica(t, shm) })
	}
}

func sendOrLeaveSlowReplica(t *testing.T, shm string) {
	base := runtime.NumGoroutine()
	ts := raceJob(t, shm)
	defer closeAll(ts)
	const n = 48 << 20 // far more than the socket buffers hold
	big := make([]byte, n)
	for i := range big {
		big[i] = byte(i*13 + i>>9)
	}
	small := bytes.Repeat([]byte{9, 8, 7}, 1000)
	tagBig := kx.Tag{FP: fpAll, Seq: 5, Layer: 0, Phase: kx.PhaseDown, Race: true}
	tagSmall := kx.Tag{FP: fpAll, Seq: 5, Layer: 1, Phase: kx.PhaseDown, Race: true}

	release := holdReads(ts[1]) // rank 1's readers stop at the next frame: the socket fills up
	leave := make(chan struct{})
	go func() { time.Sleep(30 * time.Millisecond); close(leave) }()
	took := within(t, 5*time.Second, func() {
		if err := ts[0].SendOrLeave(1, tagBig, leave, big[:n/2], big[n/2:]); err != nil {
			t.Error(err)
		}
		if err := ts[0].SendOrLeave(1, tagSmall, nil, small); err != nil {
			t.Error(err)
		}
	})
	if took > time.Second {
		t.Errorf("the sender was held %v by a replica that does not read", took)
	}
	if !ts[0].peers[1].lateBusy() {
		t.Errorf("nothing was left to the background, though rank 1 read nothing")
	}
	want := bytes.Clone(big)
	clear(big) // the caller may reuse its buffers at once: the queue has its own copy
	release()

	var got []byte
	var err error
	within(t, 10*time.Second, func() { got, err = ts[1].Receiver().Recv(0, tagBig) })
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("big message: %d bytes, %v, equal %v", len(got), err, bytes.Equal(got, want))
	}
	within(t, 5*time.Second, func() { got, err = ts[1].Receiver().Recv(0, tagSmall) })
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small message: %d bytes, %v", len(got), err)
	}
	closeAll(ts)
	noLeak(t, base)
}
