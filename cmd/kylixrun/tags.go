package main

import (
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

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
	cur       int          // the process's rank in the job's current comm, -1 if none (under job.tagMu)
	streams   []*tagStream // its output pipes whose tags change at a byte (set before it is tracked)
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
	for _, s := range r.streams {
		s.change(p)
	}
}

// prefixAt is the prefix of a line of the rank's output that starts at byte off of its
// stream: the tag taken when the launcher reads it, for a stream read without a tagStream (a
// remote rank's, whose bytes in flight no pipe counts).
func (r *rank) prefixAt(off int64) (string, int64) { return r.prefix(), math.MaxInt64 }

// tagStream reads one output pipe of a local rank for --tag-output so that a new tag starts at
// the first byte written after the resize that made it: the bytes still in the pipe when the
// tag changes were written before the process could know of the resize (the launcher follows
// each resize before anyone hears of it), and keep the old tag, however late the launcher
// reads them.
type tagStream struct {
	rc       syscall.RawConn
	mu       sync.Mutex
	consumed int64       // bytes read from the pipe
	base     string      // the tag of the bytes before changes[0].at
	changes  []tagChange // later tags, by the offset they start at
}

type tagChange struct {
	at     int64
	prefix string
}

// newTagStream reads f (a pipe's read end, in the runtime's poller) with prefix as its first
// tag; nil if f cannot be read that way.
func newTagStream(f *os.File, prefix string) *tagStream {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &tagStream{rc: rc, base: prefix}
}

// Read takes what the pipe holds, counting it under mu so that change sees every byte either
// read or still in the pipe.
func (s *tagStream) Read(p []byte) (int, error) {
	var n int
	var err error
	rerr := s.rc.Read(func(fd uintptr) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for {
			n, err = syscall.Read(int(fd), p)
			if err != syscall.EINTR {
				break
			}
		}
		if err == syscall.EAGAIN {
			return false // the poller waits for data
		}
		if n > 0 {
			s.consumed += int64(n)
		}
		return true
	})
	switch {
	case rerr != nil:
		return 0, rerr
	case err != nil:
		return 0, err
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// change makes prefix the tag of the bytes written from now on: from the bytes read so far
// plus those waiting in the pipe. Where the pipe cannot say, from the bytes read so far.
func (s *tagStream) change(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.consumed
	_ = s.rc.Control(func(fd uintptr) {
		if n, ok := pipePending(int(fd)); ok {
			at += int64(n)
		}
	})
	s.changes = append(s.changes, tagChange{at, prefix})
}

// prefixAt is the tag of a line that starts at byte off (offs only grow), and the offset of
// the next change known.
func (s *tagStream) prefixAt(off int64) (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.changes) > 0 && s.changes[0].at <= off {
		s.base = s.changes[0].prefix
		s.changes = s.changes[1:]
	}
	if len(s.changes) > 0 {
		return s.base, s.changes[0].at
	}
	return s.base, math.MaxInt64
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
