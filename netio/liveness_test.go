package netio

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"strings"
	"testing"
	"time"
)

// A peer that stops answering without closing its connection (a stopped process, a cut link)
// is declared dead after liveness: waits for it fail with CodePeer naming it, long before the
// timeout. Here rank 1 runs no heartbeats (as if stopped) while rank 0 does.
func TestLivenessSilentPeer(t *testing.T) {
	ts := mustJob(t, 2, time.Minute)
	defer closeAll(ts)
	ts[0].configure(kx.Options{Liveness: 400 * time.Millisecond, Log: "off"})
	ts[0].Receiver().Begin(4, fpAll)
	var err error
	// The timeout is a minute: CodePeer saying nothing was heard is liveness ending the wait,
	// which no timing can tell better; 10 liveness periods are a fail-safe.
	took := within(t, 10*400*time.Millisecond, func() { _, err = ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Seq: 4, Phase: kx.PhaseUp}) })
	wantErr(t, err, kx.CodePeer, "rank 1", "nothing heard from it", "liveness_ms 400")
	if took < 300*time.Millisecond {
		t.Fatalf("declared dead after %v, before liveness_ms 400", took)
	}
	if got := ts[0].Peers().FailedRanks(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("FailedRanks = %v", got)
	}
}

// A live peer that is late to its call keeps sending heartbeats: it is waited for past
// liveness, up to the timeout, and then the wait fails with CodeTimeout, not CodePeer. With
// log=warn a stalled wait reports itself, naming the rank that has not called the collective.
func TestLivenessLatePeerIsWaitedFor(t *testing.T) {
	t.Setenv("KYLIX_STALL_MS", "300")
	ts := mustJob(t, 2, 1500*time.Millisecond)
	defer closeAll(ts)
	var logged bytes.Buffer
	for _, tr := range ts {
		tr.configure(kx.Options{Liveness: 250 * time.Millisecond, Log: "warn"})
	}
	ts[0].mb.SetStallReports(mailbox.StallReportFromEnv(), func(format string, args ...any) {
		logged.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
	})
	ts[0].Receiver().Begin(4, fpAll)
	ts[1].Receiver().Begin(3, fpAll) // rank 1 is still in an earlier collective
	var err error
	took := within(t, 5*time.Second, func() { _, err = ts[0].Receiver().Recv(1, kx.Tag{FP: fpAll, Seq: 4, Phase: kx.PhaseUp}) })
	wantErr(t, err, kx.CodeTimeout, "rank 1 sent nothing")
	if took < 1400*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", took)
	}
	if f := ts[0].Peers().FailedRanks(); len(f) != 0 {
		t.Fatalf("a live peer was declared dead: %v", f)
	}
	lines := logged.String()
	if strings.Count(lines, "stall:") < 3 || !strings.Contains(lines, "not called yet by rank(s) 1") || !strings.Contains(lines, "collective 4") {
		t.Fatalf("stall reports:\n%s", lines)
	}
}
