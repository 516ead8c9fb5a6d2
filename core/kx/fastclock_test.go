package kx

import (
	"sync"
	"testing"
	"time"
)

// FastMono follows MonoNow: never ahead of it, never far behind, through the first fit and
// the refits that follow (a line serves fastAnchorNs), and a goroutine's readings do not go
// back by more than the line's lag (a reading of MonoNow before the first line, or another
// goroutine's new line, may be a few ns ahead of it). Where the counter does not serve it is
// MonoNow itself and the same holds.
func TestFastMonoFollowsMonoNow(t *testing.T) {
	const backSlack = 1000 // ns
	deadline := time.Now().Add(3 * fastAnchorNs * time.Nanosecond).Add(2 * time.Millisecond)
	var worstLag int64
	var reads, fitted int
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 3; g++ { // other readers refit meanwhile: lines change under this one
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for time.Now().Before(deadline) {
				v := FastMono()
				if v < last-backSlack {
					errs <- "a reading went back"
					return
				}
				last = v
			}
		}()
	}
	last := int64(0)
	for time.Now().Before(deadline) {
		before := MonoNow()
		v := FastMono()
		after := MonoNow()
		reads++
		if fast.line.Load() != nil {
			fitted++
		}
		if v > after {
			t.Fatalf("FastMono %d read ahead of MonoNow %d (read after it)", v, after)
		}
		if v < last-backSlack {
			t.Fatalf("FastMono went back: %d after %d", v, last)
		}
		last = v
		worstLag = max(worstLag, before-v)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// the line's lag: its rate's error bound times at most fastAnchorNs (1e-3 at the loosest
	// fit allowed: 10 us), plus a reader descheduled between its two reads
	if worstLag > 2_000_000 {
		t.Fatalf("FastMono fell %v behind MonoNow", time.Duration(worstLag))
	}
	t.Logf("%d reads, %d on a line (counter serves: %v), worst lag %v", reads, fitted, fast.state.Load() > 0,
		time.Duration(worstLag))
	if TSCUsable() && fitted == 0 {
		t.Fatal("the counter serves, but no line was ever fitted")
	}
}

func BenchmarkFastMono(b *testing.B) {
	FastMono()
	time.Sleep(2 * time.Millisecond) // past the first fit's span
	for range b.N {
		FastMono()
	}
}

func BenchmarkMonoNow(b *testing.B) {
	for range b.N {
		MonoNow()
	}
}

// A line found reading ahead of MonoNow at a refit (the counter's rate changed under it) is
// dropped, and a new one fitted from there a millisecond later.
func TestFastMonoRefitsAfterRateChange(t *testing.T) {
	if !TSCUsable() {
		t.Skip("the kernel does not keep time with the time-stamp counter here")
	}
	var f fastClock
	f.refit() // the first pair
	time.Sleep(2 * time.Millisecond)
	f.refit()
	l := f.line.Load()
	if l == nil {
		t.Fatal("no line after 2 ms")
	}
	fastRun := *l
	fastRun.rate += fastRun.rate / 100 // 1% fast: 10 us ahead after 1 ms
	f.line.Store(&fastRun)
	time.Sleep(time.Millisecond)
	if got, now := f.refit(), MonoNow(); got > now {
		t.Fatalf("refit read %d, ahead of MonoNow %d", got, now)
	}
	if f.line.Load() != nil {
		t.Fatal("the line that ran ahead was kept")
	}
	time.Sleep(2 * time.Millisecond)
	f.refit()
	if f.line.Load() == nil {
		t.Fatal("no new line 2 ms after the reset")
	}
	if v, now := f.extend(), MonoNow(); v > now {
		t.Fatalf("the new line reads %d, ahead of MonoNow %d", v, now)
	}
}
