package chaos

import (
	"math/rand/v2"
	"time"
)

// The faults, in the table's order. "Removing" faults take a member out of the job (it dies,
// is taken for dead, or leaves); the others must leave every member in.
var faultKinds = []struct {
	name     string
	weight   float64
	netns    bool // needs two network namespaces
	removing bool
	what     string
}{
	{"kill", 3, false, true, "SIGKILL of a member"},
	{"stop-short", 2, false, false, "SIGSTOP, SIGCONT after liveness_ms/3"},
	{"stop-long", 1.5, false, true, "SIGSTOP, SIGCONT after 1.5 liveness_ms"},
	{"link-short", 1.5, true, false, "link between the namespaces down for liveness_ms/3"},
	{"link-long", 1, true, true, "link down for 1.5 liveness_ms (the job splits)"},
	{"rate-drop", 1.5, true, false, "link held to 2 Mbit/s (tbf) for 2-6 s"},
	{"join", 2, false, false, "kylixrun --join of 1 process (2 with replication 2)"},
	{"leave", 1.5, false, true, "a member finalizes and exits (SIGUSR1)"},
	{"stalled-joiner", 1, false, false, "a joiner SIGSTOPped once connected to the join port, for 1.5 liveness_ms"},
	{"kill-in-resize", 1.5, false, true, "SIGKILL of a member inside kylix_resize"},
}

// event is one planned fault: when, what, and which target (an index into the targets there
// are then, modulo their number).
type event struct {
	At   time.Duration
	Kind string
	Pick uint32
}

// schedule draws the faults of a run of length from seed: the same seed and configuration give
// the same faults in the same order at the same times (the processes' interleavings are real,
// so which step a fault hits varies).
func schedule(seed int64, length, gap time.Duration, netns bool) []event {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	total := 0.0
	for _, k := range faultKinds {
		if netns || !k.netns {
			total += k.weight
		}
	}
	var out []event
	for at := gap / 2; at < length; at += time.Duration(float64(gap) * (0.5 + rng.Float64())) {
		x := rng.Float64() * total
		for _, k := range faultKinds {
			if !netns && k.netns {
				continue
			}
			if x -= k.weight; x < 0 {
				out = append(out, event{At: at, Kind: k.name, Pick: rng.Uint32()})
				break
			}
		}
	}
	return out
}

func removing(kind string) bool {
	for _, k := range faultKinds {
		if k.name == kind {
			return k.removing
		}
	}
	return false
}
