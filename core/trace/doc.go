// Package trace is a rank's timeline (option timeline=DIR): every collective, its layers'
// phases, the waits naming the peers waited for, the caller's own spans (kylix_mark) and the
// instants worth seeing (failures, resizes), written to DIR/rank-<R>.json in the Chrome Trace
// Event Format that Perfetto and chrome://tracing open, as Horovod's timeline and PyTorch's
// profiler do.
//
// The file is the format's JSON array form, one event a line, each followed by a comma: the
// format lets the closing bracket be missing, so the file of a rank killed mid-run still loads,
// and a reader that goes line by line (Load) takes every whole line.
//
// Cost: a comm without a timeline pays one nil test a hook. With one, an event is a fixed-size
// record written into one of two fixed buffers under a mutex; a writer goroutine swaps the
// buffers, encodes and writes. It runs when a call lets it, at the end of every flushCalls-th
// collective, which every rank reaches at once so that their pauses overlap (letWriterRun), and
// otherwise every flushEvery or when a buffer is half full. When the writer falls behind and
// both buffers are full, events are dropped and counted (the count goes in the file): a call
// never waits for the disk. The file's blocks are reserved ahead of its end where the kernel
// can (reserve_linux.go), which halves a write's cost on ext4. A small call's own share (its
// clock reads and records) and the writer's (encoding and writing about 280 bytes an event)
// are measured in docs/measurements.md, "The timeline's cost".
//
// Clocks: each rank's events are on its own monotonic clock, started at its wall-clock time,
// plus the offset to rank 0's clock that Align measures at init over the job's own connections;
// the offset's error bound is written in the file (merge and the tests use it). The monotonic
// clock is read as kx.FastMono (clock.go): where the kernel keeps time with the CPU's
// time-stamp counter, that counter on a line fitted to the monotonic clock and kept at or
// behind it; a small call reads the clock about six times, and the counter costs a fraction of
// a vDSO clock_gettime.
package trace
