// Package kx is the vocabulary every other Kylix package shares, and nothing else: error codes
// and the Error type with its typed references (ranks, collectives, layers), message tags and
// phase names, collective kinds and fingerprints, dtypes and ops, the parsed options, logging,
// and the Transport interface between the algorithms (core) and the transports (netio).
//
// It imports only the standard library, so netio, core's packages, capi and the commands can
// all depend on it without depending on each other.
package kx
