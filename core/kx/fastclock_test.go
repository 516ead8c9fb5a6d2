package kx

import (
	"sync"
	"sync/atomic"
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
	// Read through three lines' spans, and on a loaded machine (CI runs packages side by side on
	// two CPUs) go on until this goroutine has read many times on a line: a deadline alone once
	// left it one read, descheduled for the whole span. The hard bound keeps the test finite.
	span := time.Now().Add(3 * fastAnchorNs * time.Nanosecond).Add(2 * time.Millisecond)
	hard := time.Now().Add(20 * time.Second)
	const wantFitted = 10_000
	var stop atomic.Bool
	defer stop.Store(true) // a failure below ends the readers too
	var worstLag int64
	var reads, fitted int
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 3; g++ { // other readers refit meanwhile: lines change under this one
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for !stop.Load() {
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
	for {
		if now := time.Now(); now.After(hard) ||
			(now.After(span) && (fitted >= wantFitted || !TSCUsable())) {
			break
		}
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
	stop.Store(true)
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
// dropped, and a new one fitted from there a millisecond later. A refit whose (counter, MonoNow)
// pair is loose (the thread interrupted between the reads: often on a loaded machine) changes
// nothing and is tried again, as FastMono's next read would.
func TestFastMonoRefitsAfterRateChange(t *testing.T) {
	if !TSCUsable() {
		t.Skip("the kernel does not keep time with the time-stamp counter here")
	}
	// refitUntil refits until done holds, at most 2000 times 100 us apart, and returns what the
	// last refit read
	refitUntil := func(f *fastClock, done func() bool) (got, now int64) {
		for try := 0; try < 2000; try++ {
			got, now = f.refit(), MonoNow()
			if done() {
				return got, now
			}
			time.Sleep(100 * time.Microsecond)
		}
		return got, now
	}
	var f fastClock
	f.refit() // the first pair
	time.Sleep(2 * time.Millisecond)
	refitUntil(&f, func() bool { return f.line.Load() != nil })
	l := f.line.Load()
	if l == nil {
		t.Fatal("no line after 2 ms and 2000 tries")
	}
	fastRun := *l
	fastRun.rate += fastRun.rate / 100 // 1% fast: 10 us ahead after 1 ms
	f.line.Store(&fastRun)
	time.Sleep(time.Millisecond)
	got, now := refitUntil(&f, func() bool { return f.line.Load() != &fastRun })
	if f.line.Load() != nil {
		t.Fatal("the line that ran ahead was kept")
	}
	if got > now {
		t.Fatalf("the refit that dropped the line read %d, ahead of MonoNow %d", got, now)
	}
	time.Sleep(2 * time.Millisecond)
	refitUntil(&f, func() bool { return f.line.Load() != nil })
	if f.line.Load() == nil {
		t.Fatal("no new line 2 ms after the reset")
	}
	if v, now := f.extend(), MonoNow(); v > now {
		t.Fatalf("the new line reads %d, ahead of MonoNow %d", v, now)
	}
}
