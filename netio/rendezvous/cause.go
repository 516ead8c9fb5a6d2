package rendezvous

import (
	"errors"
	"kylix/core/kx"
	"net"
	"sync"
	"time"
)

// A rank keeps its rendezvous connection after the table, as a line to the launcher: when one of
// its calls fails it says why and whom it blames, so the launcher can name the rank whose failure
// started a job's end rather than the first rank to exit (kylixrun).
//
//	client → server  {type:"cause", code, error, rank}   rank: the rank blamed (itself if none)
//	server → client  {type:"ack"}
//
// The client waits for the ack, so the launcher has the account before the rank's call returns,
// hence before the rank can exit or its peers can see it gone.

// Cause is a rank's account of a failed call.
type Cause struct {
	Code   kx.Code
	Msg    string
	Blamed int // the rank the failure names (the reporter itself when none)
}

// causeWait bounds a report: a launcher that does not answer costs a failing call no more.
const causeWait = time.Second

var causeLine struct {
	mu sync.Mutex
	c  net.Conn
}

// keepCauseLine makes c, a rendezvous connection that delivered the table, this process's line
// to the launcher. One line per process: a later rendezvous (a new comm) replaces it.
func keepCauseLine(c net.Conn) {
	causeLine.mu.Lock()
	old := causeLine.c
	causeLine.c = c
	causeLine.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// ReportFailure tells the launcher, if one listens, that a call of rank self failed with err
// (msg: the message as the caller reports it, the call's name included).
// The rank blamed is the one err names, else the peer that reported it, else self. Bounded by
// causeWait; a line that fails once is dropped (a server that does not collect causes, such as
// rank 0's own under mpirun, closes it after the table).
func ReportFailure(self int, msg string, err error) {
	blamed := self
	var e *kx.Error
	if errors.As(err, &e) {
		if r, ok := e.Rank(); ok {
			blamed = r
		} else if r, ok := e.Reporter(); ok {
			blamed = r
		}
	}
	causeLine.mu.Lock()
	defer causeLine.mu.Unlock()
	c := causeLine.c
	if c == nil {
		return
	}
	c.SetDeadline(time.Now().Add(causeWait))
	m := &message{Type: "cause", Code: int(kx.CodeOf(err)), Error: msg, Rank: blamed}
	if writeMsg(c, m) == nil {
		if a, rerr := readMsg(c); rerr == nil && a.Type == "ack" {
			c.SetDeadline(time.Time{})
			return
		}
	}
	c.Close()
	causeLine.c = nil
}

// Causes returns, by rank, the last failure each rank reported since the table.
func (s *Server) Causes() map[int]Cause {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]Cause, len(s.causes))
	for r, c := range s.causes {
		out[r] = c
	}
	return out
}

// recordCause stores reg's report and acknowledges it.
func (s *Server) recordCause(reg *registration, m *message) {
	s.mu.Lock()
	if s.causes == nil {
		s.causes = map[int]Cause{}
	}
	s.causes[reg.rank] = Cause{Code: kx.Code(m.Code), Msg: m.Error, Blamed: m.Rank}
	s.mu.Unlock()
	reg.wmu.Lock()
	reg.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	writeMsg(reg.conn, &message{Type: "ack"})
	reg.wmu.Unlock()
}
