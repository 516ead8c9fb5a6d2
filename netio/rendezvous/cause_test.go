package rendezvous

import (
	"kylix/core/kx"
	"testing"
	"time"
)

// A rank's failure report reaches the server over the rendezvous connection before
// ReportFailure returns, with the rank it blames.
func TestReportFailureReachesServer(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", 1, "k", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, _, err := Lookup(srv.Addr(), 0, 1, "127.0.0.1:7000", "k", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ReportFailure(0, "kylix_reduce: rank 3 is lost", kx.Errorf(kx.CodePeer, "rank %d is lost", kx.RankRef(3)))
	got := srv.Causes()[0]
	if want := (Cause{Code: kx.CodePeer, Msg: "kylix_reduce: rank 3 is lost", Blamed: 3}); got != want {
		t.Errorf("after a peer's loss: %+v, want %+v", got, want)
	}
	ReportFailure(0, "kylix_reduce: out is NULL", kx.Errorf(kx.CodeArg, "out is NULL"))
	got = srv.Causes()[0]
	if want := (Cause{Code: kx.CodeArg, Msg: "kylix_reduce: out is NULL", Blamed: 0}); got != want {
		t.Errorf("after its own bad argument: %+v, want %+v", got, want)
	}
	ReportFailure(0, "relayed", kx.Reported(kx.CodeMismatch, "rank 2 rejected", 2, -1))
	if b := srv.Causes()[0].Blamed; b != 2 {
		t.Errorf("a failure reported by rank 2 blames %d, want 2", b)
	}
	ReportFailure(0, "relayed", kx.Reported(kx.CodePeer, "rank 3 is lost", 2, 3))
	if b := srv.Causes()[0].Blamed; b != 3 {
		t.Errorf("a loss of rank 3 reported by rank 2 blames %d, want 3", b)
	}
	// A server that is gone costs the report nothing and drops the line.
	srv.Close()
	ReportFailure(0, "late", kx.Errorf(kx.CodeArg, "x"))
	causeLine.mu.Lock()
	defer causeLine.mu.Unlock()
	if causeLine.c != nil {
		t.Error("the line to a closed server was kept")
	}
}
