package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"kylix/core/kx"
	"kylix/netio/rendezvous"
)

// renumber (2 ranks of kylixrun --elastic): rank 0, as a resize's leader would, asks the
// launcher's rendezvous for a membership that swaps the two ranks; then each says its new rank.
func renumber(r int, o kx.Options, dir string) {
	done := filepath.Join(dir, "renumbered")
	if r == 0 {
		_, err := rendezvous.Admit(o.Rendezvous, o.Secret, kx.AdmitRequest{Members: []string{"127.0.0.1:1", "127.0.0.1:2"},
			Prev: []int{1, 0}, Replication: 1, Wait: time.Second, Liveness: time.Second}, 20*time.Second)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			fail(err)
		}
	} else {
		waitFor(done)
	}
	fmt.Printf("rank %d is now rank %d\n", r, 1-r)
}

// rejoin ARGS: rank 1 dies (SIGKILL) and is relaunched as a joiner (--restarts); rank 0 asks
// the launcher's rendezvous to admit as many joiners as ARGS[0] says (the relaunched one, and
// those of a kylixrun --join), and the joiners say the rank they were admitted as.
func rejoin(r int, o kx.Options, args []string) {
	switch r {
	case 1:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case 0:
		need, _ := strconv.Atoi(args[0])
		a, err := rendezvous.Admit(o.Rendezvous, o.Secret, kx.AdmitRequest{Members: []string{"127.0.0.1:1"},
			Prev: []int{0}, Need: need, Replication: 1, Wait: 60 * time.Second, Liveness: 2 * time.Second}, 90*time.Second)
		if err != nil {
			fail(err)
		}
		fmt.Printf("rank 0 admitted %d joiners\n", a.Joiners)
	}
}

// joinSwap DIR (1 rank of kylixrun --elastic, 1 joiner of a kylixrun --join): rank 0 asks the
// launcher's rendezvous to admit the joiner (as rank 1), then, as soon as the joiner has said
// so (DIR/joined: a real joiner takes part in the next resize once admitted), for a membership
// that swaps the two; each says its rank after the swap once it is done (DIR/swapped).
func joinSwap(r int, o kx.Options, dir string) {
	a, err := rendezvous.Admit(o.Rendezvous, o.Secret, kx.AdmitRequest{Members: []string{"127.0.0.1:1"},
		Prev: []int{r}, Need: 1, Replication: 1, Wait: 60 * time.Second, Liveness: 2 * time.Second}, 90*time.Second)
	if err != nil {
		fail(err)
	}
	if len(a.Peers) != 2 || a.Prev[0] != 0 {
		fail(fmt.Errorf("admission %v, want rank 0 kept and one joiner", a))
	}
	waitFor(filepath.Join(dir, "joined"))
	if _, err := rendezvous.Admit(o.Rendezvous, o.Secret, kx.AdmitRequest{Members: []string{a.Peers[1], a.Peers[0]},
		Prev: []int{1, 0}, Replication: 1, Wait: time.Second, Liveness: time.Second}, 20*time.Second); err != nil {
		fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "swapped"), nil, 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("rank 0 is now rank 1\n")
}

// joiner waits at KYLIX_JOIN, listening where a member would reach it, until a resize admits it.
// In the mode joinswap it then waits for the swap (joinSwap) and says its rank after it.
func joiner(mode, arg string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	defer ln.Close()
	rank, _, err := rendezvous.Join(os.Getenv("KYLIX_JOIN"), ln.Addr().String(), os.Getenv("KYLIX_SECRET"), 60*time.Second)
	if err != nil {
		fail(err)
	}
	fmt.Printf("joined as rank %d\n", rank)
	if mode == "joinswap" {
		if err := os.WriteFile(filepath.Join(arg, "joined"), nil, 0o644); err != nil {
			fail(err)
		}
		waitFor(filepath.Join(arg, "swapped"))
		fmt.Printf("rank %d is now rank %d\n", rank, 1-rank)
	}
}

func waitFor(path string) {
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	fail(fmt.Errorf("no %s", path))
}
