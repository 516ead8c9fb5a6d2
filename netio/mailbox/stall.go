package mailbox

import (
	"fmt"
	"kylix/core/kx"
	"os"
	"strconv"
	"strings"
	"time"
)

// defaultStallReport is how often a wait that makes no progress logs (log=warn); the
// environment variable KYLIX_STALL_MS changes it (tests, impatient users), 0 turns it off.
const defaultStallReport = time.Minute

// StallReportFromEnv is how often a stalled wait logs: KYLIX_STALL_MS, else once a minute.
func StallReportFromEnv() time.Duration {
	v := os.Getenv("KYLIX_STALL_MS")
	if v == "" {
		return defaultStallReport
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms < 0 {
		return defaultStallReport
	}
	return time.Duration(ms) * time.Millisecond
}

// SetStallReports makes a wait that makes no progress log a line through warnf every every
// (0: never). Called before the first wait.
func (m *Mailbox) SetStallReports(every time.Duration, warnf func(format string, args ...any)) {
	m.stallEvery, m.warnf = every, warnf
}

// nextCheck is when a waiting wait looks again: at the timeout, or earlier for a stall report.
func (m *Mailbox) nextCheck(timeout, untilStall time.Duration) time.Duration {
	if m.stallEvery > 0 && untilStall > 0 && untilStall < timeout {
		return untilStall
	}
	return timeout
}

// reportStall logs that a wait has made no progress for waited (Horovod's stall inspector): the
// collective, whom it waits for, and the ranks that have not called the collective yet.
func (m *Mailbox) reportStall(tag kx.Tag, k msgKey, from int, waited time.Duration) {
	if m.warnf == nil {
		return
	}
	var late []string
	for r := range m.size {
		if r != m.rank && m.dead[r] == nil && !m.live.called(r, tag.Seq) {
			late = append(late, strconv.Itoa(r))
		}
	}
	kind := "collective"
	if tag.Seq == m.cur {
		kind = m.fp.Kind.String()
	}
	who := fmt.Sprintf("rank %d", from)
	if srcs, _ := m.race.sources(k, from); srcs != nil {
		who = fmt.Sprintf("node %d (ranks %s)", k.src, joinInts(srcs))
	}
	notCalled := "every rank has called it"
	if len(late) > 0 {
		notCalled = "not called yet by rank(s) " + strings.Join(late, ", ")
	}
	m.warnf("stall: %v in %s (collective %d), waiting for the %s message of layer %d from %s; %s",
		waited.Round(time.Second), kind, tag.Seq, phaseName(tag.Phase), tag.Layer, who, notCalled)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
