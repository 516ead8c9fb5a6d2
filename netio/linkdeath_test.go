//go:build linux

package netio_test

// A peer that dies (kill -9) or stops (SIGSTOP) while it sends, over each link kind: the wait
// for it fails with an error naming its rank, never hangs. Over sockets and rings the peer is a
// child process (this test binary again, as the job's last rank), so its death is the
// kernel's doing: a socket reset or end of stream in the middle of a frame, a ring whose writer
// vanished, a single-copy read from a process that is gone. The in-memory transport's ranks are
// goroutines: Kill is its crash, and a rank that stops sending its stop.

import (
	"encoding/json"
	"errors"
	"fmt"
	"kylix/core/kx"
	"kylix/netio"
	"kylix/netio/internal/nettest"
	"kylix/netio/memnet"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const childEnv = "KYLIX_LINKDEATH_CHILD"

// Tags of the death tests' messages, all of collective 3.
var (
	deathFP   = kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Count: 1}
	goTag     = kx.Tag{FP: deathFP, Seq: 3, Phase: kx.PhaseSmall}
	bigTag    = kx.Tag{FP: deathFP, Seq: 3, Phase: kx.PhaseDown}
	streamTag = kx.Tag{FP: deathFP, Seq: 3, Phase: kx.PhaseDense}
	neverTag  = kx.Tag{FP: deathFP, Seq: 3, Phase: kx.PhaseUp}
)

// streamMsg is the size of a streamed message: under refMin (256 KiB), so on a ring it goes
// through the ring itself, frame after frame.
const streamMsg = 200 << 10

// pattern fills b with message k's bytes: never zero, and different for consecutive messages.
func pattern(b []byte, k int) {
	for i := range b {
		b[i] = byte((i+k)%251 + 1)
	}
}

// landed counts the leading bytes of place that hold message 0's pattern.
func landed(place []byte) int {
	for i, b := range place {
		if b != byte(i%251+1) {
			return i
		}
	}
	return len(place)
}

// deathSpec is what the child does, passed in its environment as JSON.
type deathSpec struct {
	Mode  string         // "frame": one message of Size bytes; "stream": streamMsg messages; "coll": collectives (linkdeath_coll_test.go)
	Sig   syscall.Signal // SIGKILL or SIGSTOP, sent to itself Delay after it starts sending
	Shm   string
	Size  int
	Delay time.Duration
	Peers []string
	Ranks int // the job's size (2 unless Mode is "coll"); the child is its last rank
	Coll  collSpec
}

func (s deathSpec) env() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func parseDeathSpec(v string) (s deathSpec, err error) {
	err = json.Unmarshal([]byte(v), &s)
	return s, err
}

// deathOpts are both sides' transport options: liveness short enough that a stopped peer is
// declared lost within a second or two, the timeout far longer, so that a PEER error shows the
// death was seen (a wait that merely timed out fails with TIMEOUT).
func deathOpts(rank int, s deathSpec) kx.Options {
	return kx.Options{Rank: rank, Size: s.Ranks, Peers: s.Peers, Timeout: 30 * time.Second,
		Liveness: slow * time.Second, Secret: "linkdeath", Shm: s.Shm}
}

// TestLinkDeathChild is the last rank of the death tests' jobs, in a process of its own: it
// waits for rank 0's word, then sends and signals itself a moment into the sending (or runs
// collectives, Mode "coll").
func TestLinkDeathChild(t *testing.T) {
	v := os.Getenv(childEnv)
	if v == "" {
		t.Skip("only as the child of the TestLinkDeath tests")
	}
	s, err := parseDeathSpec(v)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := netio.ConnectLoopback(deathOpts(s.Ranks-1, s))
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode == "coll" {
		collChild(t, tr, s)
		return
	}
	tr.Receiver().Begin(3, deathFP)
	msg := make([]byte, s.Size)
	pattern(msg, 0) // touched before the clock starts: the copy is not of the zero page
	if _, err := tr.Receiver().Recv(0, goTag); err != nil {
		t.Fatal(err)
	}
	signalSelf(s)
	if s.Mode == "frame" {
		tr.Sender().Send(0, bigTag, msg)
	} else {
		for k := 0; ; k++ {
			pattern(msg, k)
			if tr.Sender().Send(0, streamTag, msg) != nil {
				break
			}
		}
	}
	time.Sleep(time.Minute) // killed, or stopped and then killed by the parent, long before
}

// signalSelf sends the child s.Sig s.Delay from now.
func signalSelf(s deathSpec) {
	go func() {
		time.Sleep(s.Delay)
		syscall.Kill(os.Getpid(), s.Sig)
	}()
}

// spawnChild starts this test binary as the child of spec s; stop kills it (our own child, by
// pid: a stopped process dies of SIGKILL too) and waits for it.
func spawnChild(t *testing.T, s deathSpec) (stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLinkDeathChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+s.env())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with this process
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// wantRankErr checks that err has code and names rank, in its typed reference and its text.
func wantRankErr(t *testing.T, err error, code kx.Code, rank int) {
	t.Helper()
	nettest.WantErr(t, err, code, fmt.Sprintf("rank %d", rank))
	var e *kx.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not a *kx.Error", err)
	}
	if r, ok := e.Rank(); !ok || r != rank {
		t.Fatalf("%v names rank %d (%v), want %d", err, r, ok, rank)
	}
}

// startChild starts rank 1 of a 2-rank job with spec s and connects rank 0 here. The caller
// kills and waits for the child (stop).
//
// A port of the spec found taken when rank 0 binds it (3 of 94 runs of the netio package under
// two busy loops, by whom is not known: internal/freeport checked it free and gives it out
// once in this process) is not what these tests are about: both ranks start again on fresh
// ports, twice at most.
func startChild(t *testing.T, s deathSpec) (tr *netio.TCP, stop func()) {
	t.Helper()
	var err error
	for try := 0; ; try++ {
		stop = spawnChild(t, s)
		if tr, err = netio.ConnectLoopback(deathOpts(0, s)); err == nil {
			break
		}
		stop()
		if try == 2 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("%v: again on fresh ports", err)
		s.Peers = nettest.FreePorts(t, len(s.Peers))
	}
	want := 0
	if s.Shm != "off" {
		want = 1
	}
	if got := tr.ShmStats().Peers; got != want {
		tr.Close()
		stop()
		t.Fatalf("shm=%s: %d shared-memory peers, want %d", s.Shm, got, want)
	}
	tr.Receiver().Begin(3, deathFP)
	return tr, stop
}

// A kill -9 or SIGSTOP in the middle of one large frame: a socket frame being read into its
// posted place, or on a ring a frame by reference being copied out of the sender's memory. The
// signal comes from the child's own timer, so whether it landed mid-frame is judged afterwards
// from the bytes that landed: a signal before the frame started or after it ended is sent again
// with the timer moved. Nothing outside the posted place is written, and the wait fails with
// PEER naming rank 1 (a stopped peer once it has been silent for liveness_ms).
//
// A stopped sender's frame by reference is copied whole (its memory is still there to read):
// there the wait after it is the one that must fail.
func TestLinkDeathMidFrame(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent only")
	}
	for _, shmOpt := range []string{"off", "auto"} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
			name := map[string]string{"off": "socket", "auto": "ring"}[shmOpt] + "/" + sigName[sig]
			t.Run(name, func(t *testing.T) {
				midFrame(t, deathSpec{Mode: "frame", Sig: sig, Shm: shmOpt, Size: 64 << 20, Delay: 2 * time.Millisecond, Ranks: 2})
			})
		}
	}
}

var sigName = map[syscall.Signal]string{syscall.SIGKILL: "kill", syscall.SIGSTOP: "stop"}

func midFrame(t *testing.T, s deathSpec) {
	for attempt := 0; ; attempt++ {
		s.Peers = nettest.FreePorts(t, 2)
		tr, stop := startChild(t, s)
		whole := make([]byte, s.Size+64) // zero sentinels around the place: the pattern has no zero byte
		place := whole[32 : 32+s.Size]
		tr.Receiver().Post(1, bigTag, place, kx.Fold{})
		if err := tr.Sender().Send(1, goTag, []byte("go")); err != nil {
			stop()
			tr.Close()
			t.Fatal(err)
		}
		_, err := tr.Receiver().Await(1, bigTag, kx.Whole)
		got := landed(place)
		byRefStopped := err == nil && s.Sig == syscall.SIGSTOP && s.Shm != "off"
		if byRefStopped {
			_, err = tr.Receiver().Recv(1, neverTag)
		}
		stop()
		for i, b := range whole {
			if (i < 32 || i >= 32+s.Size) && b != 0 {
				t.Fatalf("byte %d outside the posted place was written", i)
			}
		}
		mid := err != nil && got > 0 && got < s.Size || byRefStopped
		t.Logf("attempt %d: %d of %d bytes landed, signal after %v: %v", attempt, got, s.Size, s.Delay, err)
		if mid || attempt == 5 {
			if !mid {
				t.Errorf("in %d attempts the signal never landed in the middle of the frame", attempt+1)
			}
			if err != nil {
				wantRankErr(t, err, kx.CodePeer, 1)
				if f := tr.Peers().FailedRanks(); len(f) != 1 || f[0] != 1 {
					t.Errorf("FailedRanks = %v, want [1]", f)
				}
			}
			tr.Close()
			return
		}
		tr.Close()
		switch {
		case err == nil: // the frame ended before the signal
			s.Size = min(2*s.Size, 256<<20)
			s.Delay = max(s.Delay/2, 100*time.Microsecond)
		default: // the signal came before the frame started
			s.Delay *= 2
		}
	}
}

// A stream of frames cut by kill -9 or SIGSTOP of its sender, over every link kind: rank 0
// takes the stream and checks every message, until a wait fails with an error naming rank 1 —
// PEER on a socket or ring (a killed process's links end; a stopped one is silent past
// liveness_ms), PEER for a killed in-memory rank and TIMEOUT for a silent one (the in-memory
// transport has no heartbeats: it cannot tell a stopped rank from a late one).
func TestLinkDeathStream(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("parent only")
	}
	for _, lk := range []string{"socket", "ring", "memory"} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
			t.Run(lk+"/"+sigName[sig], func(t *testing.T) {
				t.Parallel() // mostly waits: for liveness_ms, for a child process
				if lk == "memory" {
					memStream(t, sig)
					return
				}
				shmOpt := map[string]string{"socket": "off", "ring": "auto"}[lk]
				s := deathSpec{Mode: "stream", Sig: sig, Shm: shmOpt, Size: streamMsg, Delay: 30 * time.Millisecond,
					Peers: nettest.FreePorts(t, 2), Ranks: 2}
				tr, stop := startChild(t, s)
				defer tr.Close()
				defer stop()
				if err := tr.Sender().Send(1, goTag, []byte("go")); err != nil {
					t.Fatal(err)
				}
				n, err := takeStream(t, tr.Receiver())
				t.Logf("%d messages taken, then %v", n, err)
				wantRankErr(t, err, kx.CodePeer, 1)
				if sig == syscall.SIGSTOP && !strings.Contains(err.Error(), "nothing heard from it") {
					t.Errorf("a stopped peer: %v, want it declared lost by liveness", err)
				}
			})
		}
	}
}

// takeStream takes rank 1's stream until a wait fails; it returns the messages taken and the
// error. A message that is not the next of the stream fails the test.
func takeStream(t *testing.T, rv kx.Receiver) (int, error) {
	want := make([]byte, streamMsg)
	for k := 0; ; k++ {
		b, err := rv.Recv(1, streamTag)
		if err != nil {
			return k, err
		}
		pattern(want, k)
		if string(b) != string(want) {
			t.Fatalf("stream message %d: %d bytes, not the ones sent: %s", k, len(b), describeMismatch(b, want))
		}
		rv.Release(b)
	}
}

// describeMismatch says how b differs from want (pattern's bytes): where the first wrong byte
// is, how many are wrong, and which message's pattern b starts with and how far it holds (a
// whole other message is a payload buffer given out twice; a tail of other bytes, a frame
// handed over before all of it was written).
func describeMismatch(b, want []byte) string {
	first, wrong := -1, 0
	for i := range min(len(b), len(want)) {
		if b[i] != want[i] {
			wrong++
			if first < 0 {
				first = i
			}
		}
	}
	other := "none"
	if len(b) > 0 && b[0] != 0 {
		k := (int(b[0]) - 1 + 251) % 251 // pattern(k) starts with k%251+1
		held := 0
		for held < len(b) && b[held] == byte((held+k)%251+1) {
			held++
		}
		other = fmt.Sprintf("message k≡%d (mod 251) for its first %d bytes", k, held)
	}
	if first < 0 {
		return fmt.Sprintf("%d bytes, %d wanted; the bytes are %s", len(b), len(want), other)
	}
	return fmt.Sprintf("first wrong byte at %d (%d there, %d wanted), %d of %d wrong; the bytes are %s",
		first, b[first], want[first], wrong, len(b), other)
}

// memStream is TestLinkDeathStream in memory: rank 1 sends 20 messages, then is killed or
// stops sending until the test ends.
func memStream(t *testing.T, sig syscall.Signal) {
	ms := memnet.NewJob(2, slow*time.Second)
	defer ms[0].Close()
	for _, m := range ms {
		m.Receiver().Begin(3, deathFP)
	}
	resume := make(chan struct{})
	defer close(resume)
	go func() {
		msg := make([]byte, streamMsg)
		for k := 0; k < 20; k++ {
			pattern(msg, k)
			if ms[1].Send(0, streamTag, msg) != nil {
				return
			}
		}
		if sig == syscall.SIGKILL {
			ms[1].Kill()
			return
		}
		<-resume
		ms[1].Close()
	}()
	n, err := takeStream(t, ms[0].Receiver())
	t.Logf("%d messages taken, then %v", n, err)
	if n != 20 {
		t.Errorf("%d messages taken before the error, want the 20 sent", n)
	}
	code := kx.CodePeer
	if sig == syscall.SIGSTOP {
		code = kx.CodeTimeout
	}
	wantRankErr(t, err, code, 1)
}
