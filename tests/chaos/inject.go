package chaos

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// inject plays the schedule against the running job.
func (r *run) inject(mainDone chan struct{}) {
	c := r.cfg
	events := schedule(c.Seed, c.Faults, c.Gap, c.Netns)
	start := time.Now()
	for _, ev := range events {
		for wait := time.Until(start.Add(ev.At)); wait > 0; wait = time.Until(start.Add(ev.At)) {
			select {
			case <-mainDone:
				r.res.Lost = true
				r.res.FaultsRan = time.Since(start)
				return
			case <-time.After(min(wait, 50*time.Millisecond)):
			}
			r.records() // to know every process's start time while it runs
		}
		if why := r.apply(ev); why != "" {
			r.count(ev.Kind, false)
			r.logf("%v %s: skipped: %s", ev.At.Round(time.Millisecond), ev.Kind, why)
		}
	}
	r.res.FaultsRan = c.Faults
}

func (r *run) count(kind string, done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if done {
		r.res.Faults[kind]++
		r.injected = append(r.injected, injection{time.Now(), kind})
	} else {
		r.res.Skipped[kind]++
	}
}

// apply injects one fault; it returns why it could not, or "" (asynchronous faults count
// themselves when they take place).
func (r *run) apply(ev event) string {
	c := r.cfg
	recs := r.records()
	live := r.unstopped(members(recs, "member", "resize"))
	var lost []record // the members a link-long takes out: the side of the split that stops
	if removing(ev.Kind) {
		// The job must survive: a resize goes on only with more than half of the comm's
		// members (dead replicas that stay members count against it; stopped ones and
		// those a fault already took out are as good as gone), so members may go only while
		// more than half stay.
		size := 0
		for _, m := range live {
			size = max(size, m.Size)
		}
		out := 1
		if ev.Kind == "link-long" {
			if lost = r.splitLoser(live, size); lost == nil {
				return "neither side of a split would keep a majority"
			}
			out = len(lost) - 1
		}
		if len(live) < 3 || 2*(len(live)-out) <= size {
			return fmt.Sprintf("%d live members of a comm of %d: taking %d out would leave no majority", len(live), size, out)
		}
		// The live members may be in comms of different sizes (joiners admitted by a resize
		// some members have not finished), and a member a fault took out stays in the old
		// comm until a resize drops it: so also count, against the smallest comm a live
		// member is in, every member taken out within 3 liveness_ms or stopped now.
		smallest := size
		for _, m := range live {
			smallest = min(smallest, m.Size)
		}
		if gone := r.takenOut(recs); 2*(smallest-gone-out) <= smallest {
			return fmt.Sprintf("%d members taken out within 3 liveness_ms or stopped, in a comm of %d: taking %d more out would leave no majority", gone, smallest, out)
		}
		r.mu.Lock()
		recent := time.Since(r.removedAt) < c.Liveness/2
		r.mu.Unlock()
		if recent {
			return "a member was taken out less than liveness_ms/2 ago"
		}
	}
	var target record
	if len(live) > 0 {
		target = live[int(ev.Pick%uint32(len(live)))]
	}
	if strings.HasPrefix(ev.Kind, "link") || ev.Kind == "rate-drop" {
		if why := r.linkBusy(); why != "" {
			return why
		}
	}
	ok := true
	switch ev.Kind {
	case "kill":
		ok = len(live) > 0 && r.signal(target.Pid, syscall.SIGKILL)
	case "stop-short":
		ok = len(live) > 0 && r.stop(target.Pid, c.Liveness/3)
	case "stop-long":
		ok = len(live) > 0 && r.stop(target.Pid, c.Liveness*3/2)
	case "leave":
		ok = len(live) > 0 && r.signal(target.Pid, syscall.SIGUSR1)
	case "link-short", "link-long":
		d := c.Liveness / 3
		if ev.Kind == "link-long" {
			d = c.Liveness * 3 / 2
		}
		if err := r.hosts.link(false); err != nil {
			return err.Error()
		}
		r.holdLink(d, func() { r.hosts.link(true) })
	case "rate-drop":
		if err := r.hosts.shape("2mbit"); err != nil {
			return err.Error()
		}
		r.holdLink(time.Duration(2000+ev.Pick%4000)*time.Millisecond, func() { r.hosts.shape("") })
	case "join", "stalled-joiner":
		k := 1
		if ev.Kind == "join" && c.Repl > 1 {
			k = c.Repl
		}
		if n := len(members(recs, "member", "resize", "joining", "start")); n+k > c.MaxSize {
			return fmt.Sprintf("%d processes: at most %d", n, c.MaxSize)
		}
		l, err := r.startJoin(k)
		if err != nil {
			return err.Error()
		}
		if ev.Kind == "stalled-joiner" {
			r.timers.Add(1)
			go func() {
				defer r.timers.Done()
				r.stallJoiner(l)
			}()
			return ""
		}
	case "kill-in-resize":
		ok = false
		for end := time.Now().Add(4 * time.Second); time.Now().Before(end) && !ok; time.Sleep(3 * time.Millisecond) {
			if in := r.unstopped(members(r.records(), "resize")); len(in) > 0 {
				t := in[int(ev.Pick%uint32(len(in)))]
				if ok = r.signal(t.Pid, syscall.SIGKILL); ok {
					r.logf("%v kill-in-resize: pid %d (rank %d of %d)", ev.At.Round(time.Millisecond), t.Pid, t.Rank, t.Size)
				}
			}
		}
		if !ok {
			return "no member entered kylix_resize within 4 s"
		}
	default:
		return "unknown fault " + ev.Kind
	}
	if !ok {
		return "no target"
	}
	if removing(ev.Kind) {
		if ev.Kind != "kill-in-resize" && ev.Kind != "link-long" && len(live) > 0 {
			lost = append(lost, target)
		}
		r.mu.Lock()
		r.removedAt = time.Now()
		for _, m := range lost {
			r.doomed[m.Pid] = time.Now().Add(3 * c.Liveness)
		}
		r.mu.Unlock()
	}
	r.count(ev.Kind, true)
	switch {
	case ev.Kind == "kill-in-resize": // logged with its target above
	case strings.HasPrefix(ev.Kind, "kill") || strings.HasPrefix(ev.Kind, "stop") || ev.Kind == "leave":
		r.logf("%v %s: pid %d (rank %d of %d)", ev.At.Round(time.Millisecond), ev.Kind, target.Pid, target.Rank, target.Size)
	default:
		r.logf("%v %s", ev.At.Round(time.Millisecond), ev.Kind)
	}
	return ""
}

// One link fault at a time: linkBusy says why not now, holdLink restores the link after d.
func (r *run) linkBusy() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.linkUntil) {
		return "another link fault is in force"
	}
	return ""
}

func (r *run) holdLink(d time.Duration, restore func()) {
	r.mu.Lock()
	r.linkUntil = time.Now().Add(d + 500*time.Millisecond)
	r.mu.Unlock()
	r.later(d, restore)
}

// startJoin starts kylixrun --join with k processes.
func (r *run) startJoin(k int) (*exec.Cmd, error) {
	r.mu.Lock()
	n := len(r.launchers)
	r.mu.Unlock()
	l, err := r.command(fmt.Sprintf("join-%d.out", n), "--join", r.dir+"/job.json", "-n", strconv.Itoa(k),
		"--timeout", r.timeoutS(), "--", r.cfg.Workload, r.token)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.launchers = append(r.launchers, l)
	r.mu.Unlock()
	return l, nil
}

// stallJoiner stops the joiner of launcher l as soon as it holds a connection to the join
// port (mid-handshake or waiting to be admitted) for 1.5 liveness_ms.
func (r *run) stallJoiner(l *exec.Cmd) {
	deadline := time.Now().Add(10 * time.Second)
	port := r.joinPort()
	for time.Now().Before(deadline) {
		for _, rec := range r.records() {
			if rec.Ppid == l.Process.Pid && rec.Phase == "joining" && ConnectedTo(rec.Pid, port) {
				if r.stop(rec.Pid, r.cfg.Liveness*3/2) {
					r.count("stalled-joiner", true)
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.count("stalled-joiner", false)
	r.logf("stalled-joiner: skipped: the joiner of launcher %d did not connect within 10 s", l.Process.Pid)
}

// unstopped drops the processes held by SIGSTOP now and those a removing fault took out in
// the last 3 liveness_ms (a process stopped for longer than liveness_ms goes on once resumed,
// until it finds itself left out).
func (r *run) unstopped(recs []record) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := recs[:0]
	for _, rec := range recs {
		if !r.stopped[rec.Pid] && !time.Now().Before(r.doomed[rec.Pid]) {
			out = append(out, rec)
		}
	}
	return out
}

// splitLoser says which members a cut of the link between the namespaces takes out, the side
// that cannot go on (a resize needs more than half of the members, or exactly half with rank
// 0), plus one empty record so that the answer is never empty; nil when neither side could.
func (r *run) splitLoser(live []record, size int) []record {
	ino := func(path string) uint64 {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return 0
		}
		return st.Ino
	}
	b := ino("/run/netns/" + r.hosts.b)
	var sides [2][]record
	for _, m := range live {
		side := 0
		if ino(fmt.Sprintf("/proc/%d/ns/net", m.Pid)) == b {
			side = 1
		}
		sides[side] = append(sides[side], m)
	}
	goesOn := func(s []record) bool {
		zero := false
		for _, m := range s {
			zero = zero || m.Rank == 0
		}
		return 2*len(s) > size || (2*len(s) == size && zero)
	}
	switch {
	case goesOn(sides[0]):
		return append(sides[1], record{})
	case goesOn(sides[1]):
		return append(sides[0], record{})
	}
	return nil
}

// injection is a fault that took place, when.
type injection struct {
	at   time.Time
	kind string
}

// length is how long a fault holds once injected (0: at once).
func (c Config) length(kind string) time.Duration {
	switch kind {
	case "stop-short", "link-short":
		return c.Liveness / 3
	case "stop-long", "link-long", "stalled-joiner":
		return c.Liveness * 3 / 2
	case "rate-drop":
		return 6 * time.Second // at most
	}
	return 0
}

// allowance is what a call from start to end may take: the bound, plus for each fault in
// flight during it (from its injection until it ended and liveness_ms more, the time the
// members take to find a process it took out) liveness_ms or the fault's length, whichever is
// longer. The contract bounds each wait, not a call made of several: a resize may wait
// timeout_ms for a live member that is slow, then liveness_ms for each member a fault took out
// meanwhile (in the agreement, for the leader's decision, in connecting the resized comm).
func (r *run) allowance(start, end time.Time) (time.Duration, []string) {
	c := r.cfg
	allow := c.bound()
	var in []string
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.injected {
		if f.kind == "join" {
			continue // a joiner is admitted by a resize, or waits for the next: it delays nobody
		}
		d := c.length(f.kind)
		if f.at.Before(end) && f.at.Add(d+c.Liveness).After(start) {
			allow += max(c.Liveness, d)
			in = append(in, fmt.Sprintf("%s at %s", f.kind, f.at.Format("15:04:05.000")))
		}
	}
	return allow, in
}

// takenOut counts the members a removing fault took out within the last 3 liveness_ms (whether
// or not their process still runs) and the members held by SIGSTOP now.
func (r *run) takenOut(recs map[int]record) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	now := time.Now()
	for pid, until := range r.doomed {
		if pid != 0 && now.Before(until) { // pid 0: splitLoser's filler
			n++
		}
	}
	for pid := range r.stopped {
		if rec, ok := recs[pid]; ok && (rec.Phase == "member" || rec.Phase == "resize") && !now.Before(r.doomed[pid]) {
			n++
		}
	}
	return n
}
