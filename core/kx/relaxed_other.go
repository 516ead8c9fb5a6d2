//go:build !amd64 || noasm

package kx

import "sync/atomic"

func storeRelaxed(p *int64, v int64) { atomic.StoreInt64(p, v) }
