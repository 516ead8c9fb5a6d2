package netio

import (
	"kylix/core/kx"
	"kylix/netio/cpus"
)

// spinAllowed is cpus.SpinAllowed: a wait on a ring may spin only while this host's ranks fit
// its usable CPUs. A variable so that tests can play either host.
var spinAllowed = cpus.SpinAllowed

// ShmStats are a rank's shared-memory figures (kx.ShmStats; TCP.ShmStats).
type ShmStats = kx.ShmStats
