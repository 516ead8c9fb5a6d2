package mailbox

import "kylix/core/kx"

// How a mailbox names message phases (a fingerprint mismatch is worded by kx.MismatchError).

// phaseName names a frame's phase, whose top bit marks a racing copy.
func phaseName(p kx.Phase) string { return (p &^ raceBit).String() }
