package tagfeed

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kylix/netio/rendezvous"
)

// The tag feed hands out names unique in the job, refuses a launcher without the secret, and
// a follower has followed an admission by the time publish returns (so before the rendezvous
// tells anyone of it).
func TestTagFeedNamesAndOrder(t *testing.T) {
	f, err := Serve("127.0.0.1:0", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var mu sync.Mutex
	var got [][]int
	follow := func(a rendezvous.Admitted) {
		mu.Lock()
		got = append(got, a.Prev)
		mu.Unlock()
	}
	n1, stop1, err := Follow(f.Addr(), "s3cret", "j42", follow)
	if err != nil {
		t.Fatal(err)
	}
	defer stop1()
	n2, stop2, err := Follow(f.Addr(), "s3cret", "j42", func(rendezvous.Admitted) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if n1 != "j42" || n2 == n1 || !strings.HasPrefix(n2, "j42") {
		t.Errorf("names %q and %q", n1, n2)
	}
	if _, _, err := Follow(f.Addr(), "wrong", "j43", follow); err == nil {
		t.Errorf("a launcher without the secret was let in")
	}
	if _, _, err := Follow(f.Addr(), "s3cret", "[0] fake", follow); err == nil {
		t.Errorf("a name that is not j<pid> was granted")
	}

	for i := range 3 {
		f.Publish(rendezvous.Admitted{Prev: []int{i, -1}})
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n != i+1 {
			t.Fatalf("publish %d returned before the follower followed it (%d followed)", i, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(got, [][]int{{0, -1}, {1, -1}, {2, -1}}, slices.Equal) {
		t.Errorf("followed %v", got)
	}
}

// A follower that does not acknowledge (its launcher stopped) holds a resize up once, for
// AckWait, and not again until it catches up; what it missed still reaches it, in order.
func TestTagFeedStalledFollower(t *testing.T) {
	f, err := Serve("127.0.0.1:0", "s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := make(chan struct{})
	seen := make(chan int, 8)
	_, stop, err := Follow(f.Addr(), "s", "j7", func(a rendezvous.Admitted) {
		seen <- a.Prev[0]
		<-release
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	done := make(chan struct{})
	go func() {
		f.Publish(rendezvous.Admitted{Prev: []int{0}}) // waits AckWait, in vain
		f.Publish(rendezvous.Admitted{Prev: []int{1}}) // does not wait
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // fail-safe
		t.Fatal("publish waits for a stalled follower for good")
	}
	close(release)
	for want := range 2 {
		select {
		case p := <-seen:
			if p != want {
				t.Fatalf("followed %d, want %d", p, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("admission %d never reached the follower", want)
		}
	}
}
