package core

// SetMinPerWorker lets tests send small inputs down the multi-worker paths; it returns a
// function that restores the default.
func SetMinPerWorker(n int) (restore func()) {
	old := minPerWorker
	minPerWorker = n
	return func() { minPerWorker = old }
}
