package netio

import "kylix/netio/cpus"

// spinAllowed is cpus.SpinAllowed: a wait on a ring may spin only while this host's ranks fit
// its usable CPUs. A variable so that tests can play either host.
var spinAllowed = cpus.SpinAllowed

// shmPair is what the set-up of one connection learnt about shared memory with its peer
// (shmlink_linux.go).
type shmPair struct {
	link     *shmLink // nil: the pair talks over TCP
	sameHost bool     // the peer runs on this host, whether or not a link was made
}

// ShmStats are a rank's shared-memory figures (kylix_stats_json "shm"): how many peers it
// reaches through a segment, whether its waits may spin, and the slow paths of those waits
// (netio/shm Stats), so an oversubscribed host can be shown never to spin without a timing.
type ShmStats struct {
	Peers       int    `json:"peers"`
	RanksOnHost int    `json:"ranks_on_host"`
	SpinAllowed bool   `json:"spin_allowed"`
	Spins       uint64 `json:"spins"`
	SpinHits    uint64 `json:"spin_hits"`
	Sleeps      uint64 `json:"sleeps"`
	WakesSent   uint64 `json:"wakes_sent"`
}
