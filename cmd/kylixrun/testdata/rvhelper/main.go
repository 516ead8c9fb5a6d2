// Command rvhelper is a rank for the launcher's tests: it joins the job through the rendezvous
// kylixrun serves (netio.Connect with options from the environment), passes one message around
// the ring of ranks and exits 0. With the argument "bad-secret" it joins with a wrong secret.
// With "blame DIR" after the ring, rank 2 tells the launcher that rank 1 failed it and exits 1,
// rank 1 kills itself with SIGKILL once rank 2 has exited, and rank 0 sleeps: a culprit that
// dies without telling while the launcher waits for its account. The modes "renumber" and
// "rejoin" and "joinswap" play resizes at the launcher's rendezvous (elastic.go).
package main

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"kylix/netio"
	"kylix/netio/rendezvous"
)

func main() {
	if len(os.Args) > 2 && (os.Args[1] == "rejoin" || os.Args[1] == "joinswap") && os.Getenv("KYLIX_JOIN") != "" {
		joiner(os.Args[1], os.Args[2])
		return
	}
	getenv := os.Getenv
	if len(os.Args) > 1 && os.Args[1] == "bad-secret" {
		getenv = func(k string) string {
			if k == "KYLIX_SECRET" {
				return "not-the-job-secret"
			}
			return os.Getenv(k)
		}
	}
	opts, err := kx.ParseOptions("", getenv)
	if err != nil {
		fail(err)
	}
	t, err := netio.Connect(opts)
	if err != nil {
		fail(err)
	}
	defer t.Close()
	r, n := t.Rank(), t.Size()
	fp := kx.Fingerprint{Kind: kx.KindBarrier}
	tag := kx.Tag{Seq: 1, Phase: kx.PhaseSmall, FP: fp}
	t.Receiver().Begin(1, fp)
	if err := t.Sender().Send((r+1)%n, tag, []byte(fmt.Sprintf("from %d", r))); err != nil {
		fail(err)
	}
	msg, err := t.Receiver().Recv((r+n-1)%n, tag)
	if err != nil {
		fail(err)
	}
	if want := fmt.Sprintf("from %d", (r+n-1)%n); string(msg) != want {
		fail(fmt.Errorf("got %q, want %q", msg, want))
	}
	fmt.Printf("rank %d of %d: ring ok\n", r, n)
	switch {
	case len(os.Args) > 2 && os.Args[1] == "blame":
		blame(r, os.Args[2])
	case len(os.Args) > 2 && os.Args[1] == "renumber":
		renumber(r, opts, os.Args[2])
	case len(os.Args) > 2 && os.Args[1] == "rejoin":
		rejoin(r, opts, os.Args[2:])
	case len(os.Args) > 2 && os.Args[1] == "joinswap":
		joinSwap(r, opts, os.Args[2])
	}
}

func blame(r int, dir string) {
	pidFile := filepath.Join(dir, "pid.2")
	switch r {
	case 2:
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fail(err)
		}
		rendezvous.ReportFailure(2, "rvhelper: rank 1 is lost", kx.Errorf(kx.CodePeer, "rank %d is lost", kx.RankRef(1)))
		os.Exit(1)
	case 1:
		for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				continue
			}
			st, err := os.ReadFile("/proc/" + string(b) + "/stat")
			if i := bytes.LastIndexByte(st, ')'); err != nil || (i > 0 && bytes.HasPrefix(st[i+1:], []byte(" Z"))) {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
		fail(fmt.Errorf("rank 2 did not exit"))
	default:
		time.Sleep(60 * time.Second)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "rvhelper: %v\n", err)
	os.Exit(1)
}
