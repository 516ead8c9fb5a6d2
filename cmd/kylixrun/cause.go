package main

import (
	"fmt"
	"time"

	"kylix/netio/rendezvous"
)

// culprit follows the failing rank's account of its failure to the rank that started it. A
// rank that blames a peer is not the cause: the peer is, and the peer's own account,
// if it gave one, says why. by is the rank whose account why is; ok is false when the failing
// rank gave none (it died outside the library, or its library had no line to the launcher).
// settled is false when the chain ends at a rank that has not told yet. Whom to blame is
// already right then (a rank failed by a peer's abort blames the rank the abort names), but the
// culprit may still tell why in its own words: its peers' aborts can end them before it reports.
func culprit(causes map[int]rendezvous.Cause, failed, n int) (rank, by int, why string, ok, settled bool) {
	c, ok := causes[failed]
	if !ok {
		return failed, failed, "", false, true
	}
	rank, by, why = failed, failed, c.Msg
	seen := map[int]bool{failed: true}
	for c.Blamed != rank && c.Blamed >= 0 && c.Blamed < n && !seen[c.Blamed] {
		rank = c.Blamed
		seen[rank] = true
		next, told := causes[rank]
		if !told {
			// The blamed rank said nothing (stopped, killed, or not yet): the reporter's
			// account stands.
			return rank, by, why, true, false
		}
		c, by, why = next, rank, next.Msg
	}
	return rank, by, why, true, true
}

// causeWait bounds how long the launcher waits for a blamed rank's own account.
const causeWait = time.Second

// causeLines are the launcher's lines naming what started a job's failure, none when no rank
// said. failed is the rank whose exit ends the job. While the rank blamed has not told why, it
// is waited for up to causeWait, unless it has died (it cannot tell then): its death is named.
func (j *job) causeLines(failed int) []string {
	if j.rv == nil {
		return nil
	}
	var death string
	rank, by, why, ok, settled := culprit(j.rv.Causes(), failed, len(j.ranks))
	for end := time.Now().Add(causeWait); ok && !settled; {
		if rank < len(j.ranks) {
			if st, ended := j.ranks[rank].exitNow(); ended {
				// An account given just before the exit is in by now (the rank waits for its ack).
				if rank, by, why, ok, settled = culprit(j.rv.Causes(), failed, len(j.ranks)); !settled {
					death = fmt.Sprintf("%s %v", j.ranks[rank].where(), st)
				}
				break
			}
		}
		if !time.Now().Before(end) {
			break
		}
		time.Sleep(20 * time.Millisecond)
		rank, by, why, ok, settled = culprit(j.rv.Causes(), failed, len(j.ranks))
	}
	if !ok {
		return nil
	}
	who := fmt.Sprintf("rank %d", rank)
	if rank < len(j.ranks) {
		who = j.ranks[rank].where()
	}
	var lines []string
	if death != "" {
		lines = append(lines, death)
	}
	switch {
	case rank == failed:
		return append(lines, fmt.Sprintf("%s failed: %s", who, why))
	case by == rank:
		return append(lines, fmt.Sprintf("%s caused the failure: %s", who, why))
	}
	return append(lines, fmt.Sprintf("%s caused the failure, as rank %d reported: %s", who, by, why))
}
