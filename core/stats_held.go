package core

import (
	"kylix/core/kx"
	"kylix/core/stats"
	"slices"
	"sync"
)

// heldFigures are the statistics the transport moves in the background, between calls: a
// ring's reader goroutine sleeps and is woken while the caller computes, a replica's losing
// copy lands after the call it raced in has returned, a peer's death is noticed. They are read
// at the first look after a collective ends (or a plan is freed, or the stats are reset) and
// held until the next, so two looks with no call between them give the same JSON: the size
// protocol of kylix_stats_json (cap 0, allocate *needed, call again) relies on it.
type heldFigures struct {
	mu   sync.Mutex
	gen  uint64
	ok   bool
	repl stats.ReplicationStats
	shm  *kx.ShmStats
}

// get returns the figures held for generation gen, reading them with read when gen is new.
func (h *heldFigures) get(gen uint64, read func() (stats.ReplicationStats, *kx.ShmStats)) (stats.ReplicationStats, *kx.ShmStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ok || h.gen != gen {
		h.repl, h.shm = read()
		h.gen, h.ok = gen, true
	}
	// Copies: a caller of Comm.Stats may change what it gets.
	r := h.repl
	r.FailedRanks, r.Peers = slices.Clone(r.FailedRanks), slices.Clone(r.Peers)
	var shm *kx.ShmStats
	if h.shm != nil {
		v := *h.shm
		shm = &v
	}
	return r, shm
}
