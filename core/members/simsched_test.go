package members

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"
)

// The agreement simulation's scheduler, in the manner of FoundationDB's simulation testing: the
// real agreement code runs in simulated processes over a simulated network, and one seeded
// generator decides everything the outside world would (when a message arrives, who dies, who
// stalls, who runs next), so a seed replays the same run exactly.
//
// Each simulated process is a goroutine, but only one runs at a time: it holds the baton until
// it blocks (a wait for a message, a join, a mesh) or ends, and hands it back to the scheduler.
// Time is simulated: when nobody can run, the clock jumps to the next event (a delivery, a
// timer, a death). The code under test reads no clock of its own (every bound it has is a
// transport wait), so it needs no seam to run on this one.

// simKilled unwinds the goroutine of a process the schedule killed.
type simKilled struct{}

type simEvent struct {
	at  time.Duration
	seq uint64 // ties at the same instant go in the order they were scheduled
	fn  func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || (h[i].at == h[j].at && h[i].seq < h[j].seq)
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

type simProc struct {
	s       *sim
	name    string
	wake    chan struct{}
	blocked bool   // waiting for the baton (a process not started yet too)
	gen     uint64 // counts blocks, so a timer of an earlier block wakes nobody
	ready   bool   // in the run queue
	killed  bool
	done    bool
	end     time.Duration // when it returned
	paused  time.Duration // stopped (SIGSTOP) until then: it runs nothing before
}

type sim struct {
	now     time.Duration
	rng     *rand.Rand
	events  eventHeap
	nextSeq uint64
	procs   []*simProc
	live    int // processes not done
	runq    []*simProc
	yield   chan struct{}
	limit   time.Duration // the run stops here: a process still running is hung
	crash   string        // a panic of the code under test
	log     []string      // what the schedule did, for a failure's report
}

func newSim(seed uint64) *sim {
	return &sim{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), yield: make(chan struct{})}
}

// at runs fn at simulated time t (or now, if t is past).
func (s *sim) at(t time.Duration, fn func()) {
	s.nextSeq++
	heap.Push(&s.events, &simEvent{at: max(t, s.now), seq: s.nextSeq, fn: fn})
}

func (s *sim) note(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%9.3fms ", float64(s.now)/1e6)+fmt.Sprintf(format, args...))
}

// spawn makes a process that starts running body at time start.
func (s *sim) spawn(name string, start time.Duration, body func(p *simProc)) *simProc {
	// Until start it is paused: a wake-up meant for a running process does not start it early.
	p := &simProc{s: s, name: name, wake: make(chan struct{}), blocked: true, paused: start}
	s.procs = append(s.procs, p)
	s.live++
	go func() {
		<-p.wake
		p.blocked = false
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(simKilled); !ok && s.crash == "" {
					s.crash = fmt.Sprintf("%s panicked: %v\n%s", name, r, debug.Stack())
				}
			}
			p.done, p.end, p.blocked = true, s.now, false
			s.live--
			s.yield <- struct{}{}
		}()
		if p.killed {
			return
		}
		body(p)
	}()
	s.at(start, func() { s.makeReady(p) })
	return p
}

func (s *sim) makeReady(p *simProc) {
	if p.blocked && !p.ready && !p.done {
		p.ready = true
		s.runq = append(s.runq, p)
	}
}

// block gives the baton back until something may have changed for p or, with until >= 0, until
// that time. The caller looks again at what it waits for: wake-ups may be spurious.
func (p *simProc) block(until time.Duration) {
	s := p.s
	p.gen++
	g := p.gen
	p.blocked = true
	if until >= 0 {
		s.at(until, func() {
			if p.gen == g {
				s.makeReady(p)
			}
		})
	}
	s.yield <- struct{}{}
	<-p.wake
	p.blocked = false
	if p.killed {
		panic(simKilled{})
	}
}

// pause stops p for d (a SIGSTOP): from its own goroutine, at once.
func (p *simProc) pause(d time.Duration) {
	p.paused = p.s.now + d
	p.block(p.paused)
}

// kill ends p: at once when p is the caller, else at its next turn.
func (p *simProc) kill() {
	if p.done || p.killed {
		return
	}
	p.killed = true
	p.s.makeReady(p)
}

// run hands the baton around until every process is done or the clock passes the limit.
func (s *sim) run() {
	for s.live > 0 && s.crash == "" {
		if n := len(s.runq); n > 0 {
			i := 0
			if n > 1 {
				i = s.rng.IntN(n) // which ready process goes first is the schedule's choice too
			}
			p := s.runq[i]
			s.runq[i] = s.runq[n-1]
			s.runq = s.runq[:n-1]
			p.ready = false
			if !p.killed && s.now < p.paused {
				s.at(p.paused, func() { s.makeReady(p) })
				continue
			}
			p.wake <- struct{}{}
			<-s.yield
			continue
		}
		if len(s.events) == 0 || s.events[0].at > s.limit {
			break
		}
		e := heap.Pop(&s.events).(*simEvent)
		s.now = max(s.now, e.at)
		e.fn()
	}
}

// stop ends the goroutines of the processes still running (a hung or crashed run).
func (s *sim) stop() {
	for _, p := range s.procs {
		if !p.done {
			p.killed = true
			p.wake <- struct{}{}
			<-s.yield
		}
	}
}
