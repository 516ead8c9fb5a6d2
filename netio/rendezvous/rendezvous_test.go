package rendezvous

import (
	"fmt"
	"kylix/core/kx"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

type lookupResult struct {
	peers []string
	job   uint64
	err   error
}

func lookupAll(srv string, ranks []int, size int, secret string, timeout time.Duration) []lookupResult {
	res := make([]lookupResult, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, j, err := Lookup(srv, r, size, fmt.Sprintf("127.0.0.1:%d", 7000+r), secret, timeout)
			res[i] = lookupResult{p, j, err}
		}()
	}
	wg.Wait()
	return res
}

// waitRegs waits until the server holds n registrations.
func waitRegs(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		srv.mu.Lock()
		k := len(srv.regs)
		srv.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d registrations, want %d", k, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRendezvousFourRanks(t *testing.T) {
	base := runtime.NumGoroutine()
	srv, err := NewServer("127.0.0.1:0", 4, "k", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res := lookupAll(srv.Addr(), []int{3, 1, 0, 2}, 4, "k", 3*time.Second)
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("client %d: %v", i, r.err)
		}
		if len(r.peers) != 4 || r.job != res[0].job {
			t.Fatalf("client %d: %v job %x", i, r.peers, r.job)
		}
		for k, p := range r.peers {
			if p != fmt.Sprintf("127.0.0.1:%d", 7000+k) {
				t.Fatalf("client %d: table %v", i, r.peers)
			}
		}
	}
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
	// The server served its one job and forgets it.
	_, _, err = Lookup(srv.Addr(), 0, 4, "127.0.0.1:1", "k", 200*time.Millisecond)
	if err == nil {
		t.Fatal("second job was served")
	}
	srv.Close()
	noLeak(t, base)
}

func TestRendezvousRefusals(t *testing.T) {
	base := runtime.NumGoroutine()
	srv, err := NewServer("127.0.0.1:0", 3, "k", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	first := make(chan lookupResult, 1)
	go func() {
		p, j, err := Lookup(srv.Addr(), 1, 3, "127.0.0.1:7001", "k", 2*time.Second)
		first <- lookupResult{p, j, err}
	}()
	// Let rank 1 register, then try to register it again.
	waitRegs(t, srv, 1)
	_, _, err = Lookup(srv.Addr(), 1, 3, "127.0.0.1:7999", "k", time.Second)
	wantErr(t, err, kx.CodeAuth, "rank 1", "already registered")

	_, _, err = Lookup(srv.Addr(), 2, 3, "127.0.0.1:7002", "wrong", time.Second)
	wantErr(t, err, kx.CodeAuth, "rank 2", "wrong secret")
	_, _, err = Lookup(srv.Addr(), 2, 4, "127.0.0.1:7002", "k", time.Second)
	wantErr(t, err, kx.CodeAuth, "size=4", "size=3")

	// The refused ranks did not take a place: the real ranks 0 and 2 complete the job.
	res := lookupAll(srv.Addr(), []int{0, 2}, 3, "k", 2*time.Second)
	for _, r := range append(res, <-first) {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.peers[1] != "127.0.0.1:7001" || r.job != res[0].job {
			t.Fatalf("table %v job %x", r.peers, r.job)
		}
	}
	srv.Close()
	noLeak(t, base)
}

func TestRendezvousTimeoutNamesMissing(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", 4, "k", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res := lookupAll(srv.Addr(), []int{0, 2}, 4, "k", time.Second)
	for _, r := range res {
		wantErr(t, r.err, kx.CodeTimeout, "ranks [1 3] have not registered")
	}
	waitRegs(t, srv, 0)
	// A client that gave up is forgotten: the ranks that come later can still complete the job.
	res = lookupAll(srv.Addr(), []int{0, 1, 2, 3}, 4, "k", 2*time.Second)
	for _, r := range res {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
}

// The server proves the secret too: a rank with another secret than the server's gets refused,
// and cannot be fooled by a server without the secret.
func TestRendezvousServerProof(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", 1, "server-secret", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, _, err = Lookup(srv.Addr(), 0, 1, "127.0.0.1:1", "client-secret", time.Second)
	wantErr(t, err, kx.CodeAuth, "wrong secret")
	if got := tableProof("a", []byte{1}, []byte{2}, 5, []string{"x"}); string(got) == string(tableProof("b", []byte{1}, []byte{2}, 5, []string{"x"})) {
		t.Fatal("table proof does not depend on the secret")
	}
}

func TestRendezvousCloseBeforeServed(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", 2, "k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	wantErr(t, srv.Wait(), kx.CodeState, "missing ranks [0 1]")
}

// Connect through a rendezvous, as under kylixrun.
func TestConnectRendezvousAdvertisesConnAddr(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", 2, "k", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// With no listen host the client advertises the local address of its rendezvous connection.
	res := make(chan lookupResult, 2)
	for r := 0; r < 2; r++ {
		go func() {
			p, j, err := Lookup(srv.Addr(), r, 2, fmt.Sprintf(":%d", 7100+r), "k", 3*time.Second)
			res <- lookupResult{p, j, err}
		}()
	}
	for i := 0; i < 2; i++ {
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.peers[0] != "127.0.0.1:7100" || r.peers[1] != "127.0.0.1:7101" {
			t.Fatalf("table %v", r.peers)
		}
	}
}

// A rendezvous port taken by another program is said at once (garbage) or within the
// challenge wait (silence), never after the whole timeout.
func TestRendezvousPortTakenByAnotherProgram(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
	}{
		{"http", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "is not a Kylix rendezvous"},
		{"silent", "", "sent no rendezvous challenge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					if tc.answer != "" {
						c.Write([]byte(tc.answer))
					}
					defer c.Close()
				}
			}()
			timeout := 30 * time.Second
			if tc.answer == "" {
				timeout = time.Second // the silent case waits min(timeout, challengeWait)
			}
			var err2 error
			within(t, 3*time.Second, func() {
				_, _, err2 = Lookup(ln.Addr().String(), 1, 2, "127.0.0.1:7001", "k", timeout)
			})
			wantErr(t, err2, kx.CodeNet, tc.want, ln.Addr().String(), "taken by another program")
		})
	}
}
