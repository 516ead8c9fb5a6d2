//go:build amd64 && !noasm

package kx

// storeRelaxed stores v at p with a plain move (relaxed_amd64.s).
//
//go:noescape
func storeRelaxed(p *int64, v int64)
