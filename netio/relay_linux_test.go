package netio

import (
	"errors"
	"strings"
	"testing"

	"kylix/core/kx"
)

// A rank that closes while its collective stands failed by a peer's abort passes that abort on
// ahead of its bye, on the same link: a rank still waiting in the collective for it fails with
// the cause, not with "rank 2 has finalized" (the reporter's own frame travels on another link
// and may come later; here it never comes: only rank 2's mailbox is told).
func TestCloseRelaysAPeersAbortAheadOfItsBye(t *testing.T) {
	for _, shm := range []string{"off", "auto"} {
		t.Run(shm, func(t *testing.T) {
			ts := startShmJob(t, 3, shm)
			defer closeAll(ts)
			for _, tr := range ts {
				tr.Receiver().Begin(5, fpAll)
			}
			ts[2].mb.Abort(5, 1, kx.CodePeer, 1, "every replica of node 1 is lost")
			ts[2].Close()
			_, err := ts[0].Receiver().Recv(2, kx.Tag{FP: fpAll, Seq: 5, Phase: kx.PhaseSmall})
			if err == nil || strings.Contains(err.Error(), "finalized") || !strings.Contains(err.Error(), "every replica of node 1 is lost") {
				t.Fatalf("rank 0's wait on the closed rank 2: %v, want the failure rank 2 was told of", err)
			}
			var e *kx.Error
			if !errors.As(err, &e) || e.Code != kx.CodePeer {
				t.Fatalf("%v: want CodePeer", err)
			}
			if r, ok := e.Rank(); !ok || r != 1 {
				t.Errorf("%v blames rank %d (%v), want 1", err, r, ok)
			}
			if r, ok := e.Reporter(); !ok || r != 2 {
				t.Errorf("%v reported by %d (%v), want rank 2, which passed it on", err, r, ok)
			}
		})
	}
}
