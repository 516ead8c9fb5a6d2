package keyset

// SetForTest sets one of the package's tuning variables (MinPerWorker, HashMaxRows) or a
// caller's to v and returns the function that restores it: tests send small inputs down the
// paths meant for large ones.
func SetForTest(p *int, v int) (restore func()) {
	old := *p
	*p = v
	return func() { *p = old }
}
