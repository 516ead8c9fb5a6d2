// Command rvhelper is a rank for the launcher's tests: it joins the job through the rendezvous
// kylixrun serves (netio.Connect with options from the environment), passes one message around
// the ring of ranks and exits 0. With the argument "bad-secret" it joins with a wrong secret.
package main

import (
	"fmt"
	"kylix/core/kx"
	"os"

	"kylix/netio"
)

func main() {
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
	t.Begin(1, fp)
	if err := t.Send((r+1)%n, tag, []byte(fmt.Sprintf("from %d", r))); err != nil {
		fail(err)
	}
	msg, err := t.Recv((r+n-1)%n, tag)
	if err != nil {
		fail(err)
	}
	if want := fmt.Sprintf("from %d", (r+n-1)%n); string(msg) != want {
		fail(fmt.Errorf("got %q, want %q", msg, want))
	}
	fmt.Printf("rank %d of %d: ring ok\n", r, n)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "rvhelper: %v\n", err)
	os.Exit(1)
}
