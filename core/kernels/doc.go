// Package kernels is the arithmetic of the reduction: Identity, Combine, ScatterCombine, Gather
// and Scatter over every dtype and op, with AVX2/AVX-512 paths dispatched at start-up and plain
// Go fallbacks (KYLIX_NOSIMD, the noasm build tag); the Combiner, which folds user ops (no
// identity) and built-in ops alike; and the registry of user ops, which it knows only as Go
// functions (capi/cfn wraps the C ones).
package kernels
