//go:build !amd64

package shm

import "sync/atomic"

// storeRelease stores v in *p with release order (store_amd64.go says why it exists); here
// sync/atomic's sequentially consistent store, which includes it.
func storeRelease(p *atomic.Uint64, v uint64) { p.Store(v) }
