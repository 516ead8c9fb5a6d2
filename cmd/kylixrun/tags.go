package main

import (
	"net"
	"strconv"
	"sync/atomic"

	"kylix/netio/rendezvous"
)

// A --tag-output tag names one process for the whole job, and says its current rank when that
// is not its launch rank: "[2]" is the process started as rank 2; "[0 was 2]" is it after a
// resize made it rank 0; "[j0]" is the first joiner this launcher started (--restarts), "[3
// was j0]" that joiner once a resize admitted it as rank 3. A kylixrun --join launcher names
// its joiners after its own PID, "[j4711.0]" (the first launcher's tag feed makes it
// "[j4711-2.0]" should another launcher of the job have that PID on another host), so that no
// two launchers of a job share a name. Ranks follow the resizes the launcher's rendezvous sees
// (every resize of an --elastic job asks it for joiners); a kylixrun --join follows the same
// resizes through the first launcher's tag feed (tagfeed.go).

// tagging is a rank's current tag prefix and comm rank.
type tagging struct {
	tagPrefix atomic.Pointer[string]
	cur       int // the process's rank in the job's current comm, -1 if none (under job.tagMu)
}

// initTag sets the first tag: the launch rank, or the joiner's name (not a member yet).
func (r *rank) initTag(member bool) {
	r.cur = -1
	if member {
		r.cur = r.id
	}
	p := "[" + r.name + "] "
	r.tagPrefix.Store(&p)
}

// prefix is the rank's --tag-output prefix now.
func (r *rank) prefix() string { return *r.tagPrefix.Load() }

// setRank records that a resize made the process rank c.
func (r *rank) setRank(c int) {
	r.cur = c
	p := "[" + r.name + "] "
	if r.name != strconv.Itoa(c) {
		p = "[" + strconv.Itoa(c) + " was " + r.name + "] "
	}
	r.tagPrefix.Store(&p)
}

// joinerName is the name of the joiner number n this launcher starts.
func (j *job) joinerName(n int) string {
	if j.cfg.join != "" {
		return j.joinPrefix + "." + strconv.Itoa(n)
	}
	return "j" + strconv.Itoa(n)
}

// track adds r to the processes whose tags follow the resizes.
func (j *job) track(r *rank) {
	j.tagMu.Lock()
	j.tracked = append(j.tracked, r)
	j.tagMu.Unlock()
}

// renumber follows a resize: each member takes its new rank (adm.Prev gives every new rank's
// old one), and each joiner of this launcher that was admitted takes the rank whose address
// it listens on. Called on the rendezvous' goroutine.
func (j *job) renumber(adm rendezvous.Admitted) {
	j.tagMu.Lock()
	defer j.tagMu.Unlock()
	byOld := map[int]*rank{}
	for _, r := range j.tracked {
		if r.cur >= 0 {
			byOld[r.cur] = r
			r.cur = -1 // not a member of the new comm unless placed below
		}
	}
	for now, prev := range adm.Prev {
		if r := byOld[prev]; prev >= 0 && r != nil {
			r.setRank(now)
		}
	}
	for now, prev := range adm.Prev {
		if prev >= 0 || now >= len(adm.Peers) {
			continue
		}
		host, port, err := net.SplitHostPort(adm.Peers[now])
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || !hostIsHere(host) {
			continue // a joiner elsewhere may listen on the port number one of ours does
		}
		for _, r := range j.tracked {
			if r.joiner >= 0 && r.cur < 0 && r.host == "" && r.running() && groupListensOn(r.pid, p) {
				r.setRank(now)
				break
			}
		}
	}
}

// hostIsHere tells whether host, of a joiner's advertised address, is this machine: a loopback
// or local interface address, or this machine's name.
func hostIsHere(host string) bool {
	ip := net.ParseIP(host)
	if ip == nil {
		return isLocalHost(host)
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: the port alone decides
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
