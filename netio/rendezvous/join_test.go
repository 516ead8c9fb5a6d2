package rendezvous

import (
	"crypto/rand"
	"encoding/binary"
	"kylix/core/kx"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// servedJob is a server whose 2-rank job got its table: from then on it is the join port.
func servedJob(t *testing.T) *Server {
	t.Helper()
	srv, err := NewServer("127.0.0.1:0", 2, "k", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range lookupAll(srv.Addr(), []int{0, 1}, 2, "k", 2*time.Second) {
		if r.err != nil {
			t.Fatalf("rank %d: %v", i, r.err)
		}
	}
	return srv
}

type joinResult struct {
	rank int
	adm  kx.Admission
	err  error
}

func joinAsync(addr, my, secret string, timeout time.Duration) chan joinResult {
	ch := make(chan joinResult, 1)
	go func() {
		r, a, err := Join(addr, my, secret, timeout)
		ch <- joinResult{r, a, err}
	}()
	return ch
}

func waitWaiting(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for len(srv.Waiting()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d joiners waiting, want %d", len(srv.Waiting()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stalledJoiner authenticates as a joiner and then never reads nor answers: a stopped process.
func stalledJoiner(t *testing.T, addr, secret, my string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := readMsg(c)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	if err := writeMsg(c, &message{Type: "join", V: version, Addr: my, Nonce: nonce,
		Proof: joinProof(secret, "join", ch.Nonce, nonce, []byte(my))}); err != nil {
		t.Fatal(err)
	}
	return c
}

// Joiners wait at the served rendezvous; an admit takes every one that answers, in arrival
// order, after the members; a joiner that stalls holds the admission up by the liveness bound
// only, and stays waiting; hostile connections at the join port change nothing.
func TestJoinAdmit(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := servedJob(t)
	var amu sync.Mutex
	var admitted []Admitted
	srv.OnAdmit(func(a Admitted) {
		amu.Lock()
		admitted = append(admitted, a)
		amu.Unlock()
	})

	// Hostile traffic first: garbage, a forged length, a half-open connection.
	for _, b := range [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n"), binary.LittleEndian.AppendUint32(nil, 1<<31), nil} {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(b)
	}
	stalled := stalledJoiner(t, srv.Addr(), "k", "127.0.0.1:8100")
	defer stalled.Close()
	waitWaiting(t, srv, 1)
	j1 := joinAsync(srv.Addr(), "127.0.0.1:8101", "k", 5*time.Second)
	waitWaiting(t, srv, 2)
	j2 := joinAsync(srv.Addr(), "127.0.0.1:8102", "k", 5*time.Second)
	waitWaiting(t, srv, 3)

	const liveness = 300 * time.Millisecond
	start := time.Now()
	a, err := Admit(srv.Addr(), "k", kx.AdmitRequest{Members: []string{"127.0.0.1:8000", "127.0.0.1:8001"},
		Prev: []int{0, 1}, Need: 2, Replication: 1, Wait: 5 * time.Second, Liveness: liveness, Degrees: "auto"}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// About liveness; well under the 5 s wait, which a second round of offers would reach.
	if d := time.Since(start); d > liveness+1500*time.Millisecond {
		t.Errorf("the stalled joiner held the admission up for %v (liveness %v)", d, liveness)
	}
	wantPeers := []string{"127.0.0.1:8000", "127.0.0.1:8001", "127.0.0.1:8101", "127.0.0.1:8102"}
	if !slices.Equal(a.Peers, wantPeers) || !slices.Equal(a.Prev, []int{0, 1, -1, -1}) || a.Joiners != 2 {
		t.Fatalf("admission %+v, want peers %v", a, wantPeers)
	}
	for i, ch := range []chan joinResult{j1, j2} {
		r := <-ch
		if r.err != nil || r.rank != 2+i || r.adm.Job != a.Job || !slices.Equal(r.adm.Peers, wantPeers) {
			t.Errorf("joiner %d: rank %d job %x peers %v err %v; want rank %d job %x", i, r.rank, r.adm.Job, r.adm.Peers, r.err, 2+i, a.Job)
		}
	}
	if w := srv.Waiting(); !slices.Equal(w, []string{"127.0.0.1:8100"}) {
		t.Errorf("waiting after the admission: %v, want the stalled joiner only", w)
	}
	amu.Lock()
	if len(admitted) != 1 || admitted[0].Job != a.Job {
		t.Errorf("OnAdmit saw %+v", admitted)
	}
	amu.Unlock()

	// min_size that cannot be met: CodeTimeout after the wait, nobody admitted.
	start = time.Now()
	_, err = Admit(srv.Addr(), "k", kx.AdmitRequest{Members: wantPeers, Prev: []int{0, 1, 2, 3}, Need: 1,
		Replication: 1, Wait: 400 * time.Millisecond, Liveness: 100 * time.Millisecond}, 2*time.Second)
	// The server's min_size message is the wait ending (the client's own timeout would say it
	// got no answer); 10 waits are a fail-safe.
	wantErr(t, err, kx.CodeTimeout, "min_size", "within 400ms")
	if d := time.Since(start); d < 400*time.Millisecond || d > 10*400*time.Millisecond {
		t.Errorf("the min_size wait took %v, want about 400ms", d)
	}

	// Nobody waiting and nobody needed: an immediate admission of nobody.
	stalled.Close()
	waitWaiting(t, srv, 0)
	a, err = Admit(srv.Addr(), "k", kx.AdmitRequest{Members: wantPeers, Prev: []int{0, 1, 2, 3}, Replication: 1,
		Wait: time.Second, Liveness: time.Second}, 2*time.Second)
	if err != nil || a.Joiners != 0 {
		t.Fatalf("admit with nobody waiting: %+v %v", a, err)
	}
	srv.Close()
	noLeak(t, base)
}

// Strangers at the join port get CodeAuth and change nothing: a wrong secret (or another job's),
// a wrong protocol version (named, both of them), for joiners and for admits.
func TestJoinRefusals(t *testing.T) {
	srv := servedJob(t)
	defer srv.Close()
	_, _, err := Join(srv.Addr(), "127.0.0.1:8200", "wrong", 2*time.Second)
	wantErr(t, err, kx.CodeAuth, "wrong secret")
	_, err = Admit(srv.Addr(), "wrong", kx.AdmitRequest{Members: []string{"a:1"}, Prev: []int{0}, Replication: 1}, 2*time.Second)
	wantErr(t, err, kx.CodeAuth, "wrong secret")

	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch, _ := readMsg(c)
	nonce := make([]byte, 32)
	writeMsg(c, &message{Type: "join", V: version + 1, Addr: "127.0.0.1:8201", Nonce: nonce,
		Proof: joinProof("k", "join", ch.Nonce, nonce, []byte("127.0.0.1:8201"))})
	m, err := readMsg(c)
	if err != nil || m.Type != "error" || kx.Code(m.Code) != kx.CodeAuth {
		t.Fatalf("a joiner of another version got %+v %v", m, err)
	}
	wantErr(t, kx.Errorf(kx.Code(m.Code), "%s", m.Error), kx.CodeAuth, "version 1", "joiner 2")
	if w := srv.Waiting(); len(w) != 0 {
		t.Errorf("refused joiners are waiting: %v", w)
	}
	// The job's own members still admit (nobody).
	if _, err := Admit(srv.Addr(), "k", kx.AdmitRequest{Members: []string{"a:1", "b:2"}, Prev: []int{0, 1}, Replication: 1}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A served job whose ranks register again (kylix_finalize, then kylix_init under the same
// launcher) gets a new table from the server, which stays up for joiners.
func TestRendezvousServesAgain(t *testing.T) {
	srv := servedJob(t)
	defer srv.Close()
	res := lookupAll(srv.Addr(), []int{1, 0}, 2, "k", 2*time.Second)
	for i, r := range res {
		if r.err != nil || len(r.peers) != 2 || r.job != res[0].job {
			t.Fatalf("client %d of the second round: %v %v job %x", i, r.err, r.peers, r.job)
		}
	}
}
