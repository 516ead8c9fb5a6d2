package trace

import (
	"fmt"
	"kylix/core/kx"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// BufferEvents is the size of each of a rank's two event buffers: about 1 MiB each. A writer
// that keeps up empties one while calls fill the other.
const BufferEvents = 8192

// flushEvery bounds how long an event waits in the buffer (what a killed rank's file loses).
// A variable for the tests.
var flushEvery = 100 * time.Millisecond

// maxOpenSpans bounds the caller's nesting of kylix_mark spans.
const maxOpenSpans = 64

// Tracer is one rank's timeline. Its methods may be called from any goroutine.
type Tracer struct {
	base     time.Time // the local clock's zero
	baseMono int64     // kx.MonoNow at base
	rank     int
	pid      int
	f        *os.File
	path     string
	offset   atomic.Int64 // local clock -> rank 0's, ns (Align)
	errNs    atomic.Int64 // the offset's error bound, ns; -1: not measured
	mu       sync.Mutex
	buf      []Event // filled by calls
	spare    []Event // empty, or nil while the writer holds it
	drops    uint64
	kickNow  bool    // slot's: wake the writer at release
	enc      encoder // flush's
	closed   bool
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	spans    []openSpan  // the caller's open kylix_mark spans
	res      reservation // the writer's
	written  atomic.Int64
	// The bytes counter: the array the latest Counter call read from (the recorder's, which it
	// updates under its own lock) and its layers; when it was last recorded (0: never) and the
	// values recorded then (under mu).
	counterSrc    atomic.Pointer[[MaxCounterLayers]int64]
	counterLayers atomic.Int64
	counterAt     atomic.Int64
	counterN      [MaxCounterLayers]int64
	lastAt        int64 // the latest At: Now's floor (clock.go; atomic.LoadInt64, kx.StoreRelaxed)
}

type openSpan struct {
	name string
	ts   int64
}

// Open creates dir (when missing) and dir/rank-<rank>.json, writes the file's opening and
// starts the writer. A joiner's file is rank-<rank>-join<pid>.json: its number may be one a
// dead rank of the job had, whose file stays. The clock is unaligned (error -1) until SetClock.
func Open(dir string, rank int, joiner bool) (*Tracer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, kx.Errorf(kx.CodeArg, "timeline: cannot create directory %q: %v", dir, err)
	}
	name := "rank-" + strconv.Itoa(rank)
	if joiner {
		name += "-join" + strconv.Itoa(os.Getpid())
	}
	path := filepath.Join(dir, name+".json")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, kx.Errorf(kx.CodeArg, "timeline: cannot create %q: %v", path, err)
	}
	base, baseMono := clockPair()
	t := &Tracer{base: base, baseMono: baseMono, rank: rank, pid: os.Getpid(), f: f, path: path,
		buf: newBuffer(), spare: newBuffer(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	t.errNs.Store(-1)
	if _, err := f.WriteString("[\n"); err != nil {
		f.Close()
		return nil, kx.Errorf(kx.CodeNet, "timeline: cannot write %q: %v", path, err)
	}
	// The writer's first batch would otherwise allocate its output buffer and the file's first
	// blocks, and fault the buffer's pages in: 0.5-1 ms taken from the call that lets it in.
	t.res.reserve(t.f, 1)
	go t.writer(newOut())
	return t, nil
}

// clockPair reads the wall clock and kx.MonoNow at (nearly) the same moment: At converts a
// time.Time through the pair, so a preemption between the two reads would put every At that far
// off Now. The pair with the tightest bracket of a few tries; a bracket is a few tens of ns.
func clockPair() (time.Time, int64) {
	var best time.Time
	var bestMono, gap int64 = 0, -1
	for range 5 {
		m1 := kx.MonoNow()
		tm := time.Now()
		m2 := kx.MonoNow()
		if gap < 0 || m2-m1 < gap {
			best, bestMono, gap = tm, m1+(m2-m1)/2, m2-m1
		}
	}
	return best, bestMono
}

// newBuffer is an empty event buffer whose memory is in place already: a fresh allocation
// this large comes from pages the kernel has not given yet, and the first write to each page
// faults (a few µs on a VM). Touched here, at Open, those faults are not taken from the calls
// that fill the buffers (about 800 of them, 0.1-0.2 µs a call on a 20000-call run of small
// reduces).
func newBuffer() []Event {
	b := make([]Event, BufferEvents)
	for i := range b {
		b[i].Kind = 0 // a store, not a read: a read would map the shared zero page
	}
	return b[:0]
}

// newOut is the writer's output buffer, a write's worth with its pages in place (newBuffer).
func newOut() []byte {
	b := make([]byte, writeChunk+2*maxEventBytes)
	for i := 0; i < len(b); i += 512 {
		b[i] = 0
	}
	return b[:0]
}

// Path is the rank's file.
func (t *Tracer) Path() string { return t.path }

// Now is the local clock: nanoseconds since Open (clock.go: kx.FastMono).
func (t *Tracer) Now() int64 { return t.now() }

// At is tm on the local clock (tm was read already: the start or end of a collective); Now
// is not before it from here on (clock.go).
func (t *Tracer) At(tm time.Time) int64 { return t.AtMono(t.baseMono + int64(tm.Sub(t.base))) }

// AtMono is At for a reading of the runtime's monotonic clock (kx.MonoNow or kx.FastMono).
func (t *Tracer) AtMono(mono int64) int64 {
	ns := mono - t.baseMono
	t.at(ns)
	return ns
}

// wall is the local clock's reading as wall-clock nanoseconds (Unix), the scale Align compares.
func (t *Tracer) wall() int64 { return t.base.UnixNano() + t.Now() }

// SetClock sets the offset of this rank's clock to rank 0's and its error bound (ns; -1: not
// measured), and writes the process's metadata. rank is the rank's number (it may have changed
// since Open, for a joiner), host its host name.
func (t *Tracer) SetClock(offsetNs, errNs int64, rank int, host string) {
	t.offset.Store(offsetNs)
	t.errNs.Store(errNs)
	t.mu.Lock()
	t.rank = rank
	t.mu.Unlock()
	t.meta(host)
}

// meta writes the process's name (rank R (host, pid)), its lanes' names and the clock record.
func (t *Tracer) meta(host string) {
	var b []byte
	line := func(name string, tid int, args string) {
		b = append(b, `{"name":"`...)
		b = append(b, name...)
		b = append(b, `","ph":"M","pid":`...)
		b = strconv.AppendInt(b, int64(t.rank), 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, int64(tid), 10)
		b = append(b, `,"args":{`...)
		b = append(b, args...)
		b = append(b, "}},\n"...)
	}
	line("process_name", 0, `"name":`+string(appendJSONString(nil, fmt.Sprintf("rank %d (%s, pid %d)", t.rank, host, t.pid))))
	line("process_sort_index", 0, `"sort_index":`+strconv.Itoa(t.rank))
	for tid, n := range laneNames {
		line("thread_name", tid, `"name":"`+n+`"`)
	}
	// origin_unix_ns: when ts 0 of this file was, on rank 0's wall clock (merge aligns files
	// by it); clock_error_us: how far this rank's events may be off rank 0's.
	origin := t.base.UnixNano() + t.offset.Load()
	line("kylix_clock", 0, fmt.Sprintf(`"rank":%d,"host":%s,"pid":%d,"origin_unix_ns":%d,"offset_ns":%d,"clock_error_us":%s`,
		t.rank, appendJSONString(nil, host), t.pid, origin, t.offset.Load(), micros(t.errNs.Load())))
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.f.Write(b)
	}
}

func micros(ns int64) string {
	if ns < 0 {
		return "-1"
	}
	return string(appendMicros(nil, ns))
}

// record copies e into the buffer, or counts it dropped when the buffer is full.
func (t *Tracer) record(e *Event) {
	t.mu.Lock()
	if s := t.slot(); s != nil {
		*s = *e
	}
	t.release()
}

// slot is the buffer's next event, zero, or nil (counted dropped) when the buffer is full; mu
// is held, and release lets it go.
func (t *Tracer) slot() *Event {
	if len(t.buf) == cap(t.buf) || t.closed {
		t.drops++
		t.kickNow = true // the writer may be asleep with its spare back: swap now
		return nil
	}
	t.buf = t.buf[:len(t.buf)+1]
	t.kickNow = t.kickNow || len(t.buf) == cap(t.buf)/2
	return &t.buf[len(t.buf)-1]
}

// release unlocks mu, and wakes the writer when slot asked for it.
func (t *Tracer) release() {
	kick := t.kickNow
	t.kickNow = false
	t.mu.Unlock()
	if kick {
		t.wake()
	}
}

// wake tells the writer there is work, without waiting.
func (t *Tracer) wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// writer encodes the full buffer while calls fill the other: when a call lets it in
// (letWriterRun), every flushEvery, or sooner when the buffer is half full.
func (t *Tracer) writer(out []byte) {
	defer close(t.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		stopping := false
		select {
		case <-t.kick:
		case <-tick.C:
		case <-t.stop:
			stopping = true
		}
		out = t.flush(out[:0])
		if stopping {
			return
		}
	}
}

// maxEventBytes is a generous bound on an event's line: the writer reserves the file's blocks
// for a batch of this many bytes an event.
const maxEventBytes = 512

// writeChunk bounds a write: the writer holds the rank's processor (kylixrun gives a rank
// GOMAXPROCS=1) through a write to the page cache, and a call that wakes meanwhile waits for it
// (about 25 µs for this much). Smaller writes cost more a byte on ext4 (64 KiB: 0.125 ns, 256
// KiB: 0.095, into reserved blocks; BenchmarkFlushCalls 127 -> 108 ns an event).
const writeChunk = 256 << 10

// flush takes the filled buffer (giving the calls the spare), encodes it and writes it.
func (t *Tracer) flush(out []byte) []byte {
	t.mu.Lock()
	full := t.buf
	if t.spare == nil || len(full) == 0 {
		t.mu.Unlock()
		return out
	}
	t.buf, t.spare = t.spare[:0], nil
	pid := t.rank
	t.mu.Unlock()
	if t.enc.pid != pid {
		t.enc = encoder{pid: pid}
	}
	t.res.reserve(t.f, len(full)*maxEventBytes)
	for i := range full {
		out = full[i].encode(out, &t.enc)
		full[i] = Event{} // for the calls that fill it next (they set only what they record), while in cache
		if len(out) >= writeChunk {
			t.f.Write(out)
			out = out[:0]
		}
	}
	t.f.Write(out)
	t.written.Add(int64(len(full)))
	t.mu.Lock()
	t.spare = full[:0]
	t.mu.Unlock()
	return out
}

// Close writes what is buffered, the drop count and the closing bracket, and closes the file.
func (t *Tracer) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.mu.Unlock()
	close(t.stop)
	<-t.done
	t.mu.Lock()
	var last *Event
	// the counter's final value, when it moved since it was last recorded: the recorder's
	// last counts (its comm's collectives are over: Close comes after the last of them)
	if src := t.counterSrc.Load(); src != nil && *src != t.counterN {
		last = &Event{Kind: kindCounter, Name: "bytes", TS: max(t.Now(), t.counterAt.Load()), N: *src,
			Layer: int16(min(t.counterLayers.Load(), MaxCounterLayers))}
	}
	t.mu.Unlock()
	if last != nil {
		t.record(last)
	}
	t.flush(nil) // the writer's last flush may have found the spare still out
	t.mu.Lock()
	t.closed = true
	drops := t.drops
	t.mu.Unlock()
	b := []byte(`{"name":"kylix_end","ph":"M","pid":`)
	b = strconv.AppendInt(b, int64(t.rank), 10)
	b = append(b, `,"tid":0,"args":{"events":`...)
	b = strconv.AppendInt(b, t.written.Load(), 10)
	b = append(b, `,"dropped":`...)
	b = strconv.AppendUint(b, drops, 10)
	b = append(b, "}}\n]\n"...)
	_, err := t.f.Write(b)
	t.res.release(t.f)
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteStats writes a comm's kylix_stats_json object into the file as metadata (at finalize):
// its plans' per-layer keys and its measured links, which `kylix timeline` prices the layers
// with.
func (t *Tracer) WriteStats(js []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	b := []byte(`{"name":"kylix_stats","ph":"M","pid":`)
	b = strconv.AppendInt(b, int64(t.rank), 10)
	b = append(b, `,"tid":0,"args":`...)
	b = append(b, js...)
	b = append(b, "},\n"...)
	t.f.Write(b)
}

// Drops is how many events were dropped because the writer fell behind.
func (t *Tracer) Drops() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.drops
}

// ---- what the library records --------------------------------------------------------------

// Call records a collective: kind, fingerprint, its span, bytes moved, keys (out, in; 0 when
// not a plan's), its inline phases (nil: none; see InlineSteps) and outcome.
func (t *Tracer) Call(seq uint64, fp kx.Fingerprint, start, end int64, sent, recv, keysOut, keysIn int64,
	steps *[InlineSteps]int64, err error) {
	var msg string
	if err != nil {
		msg = err.Error()
	}
	t.mu.Lock() // written in place: a small call's one event, not built and then copied
	if e := t.slot(); e != nil {
		e.Kind, e.Name, e.TS, e.Dur, e.Seq, e.FP = kindCall, CallName(fp.Kind), start, end-start, seq, fp
		if steps != nil {
			e.Steps = *steps
		}
		e.N[0], e.N[1], e.N[2], e.N[3] = sent, recv, keysOut, keysIn
		if err != nil {
			e.N[4] = int64(kx.CodeOf(err))
			e.Msg = msg
		}
	}
	t.release()
	if err != nil {
		switch kx.CodeOf(err) {
		case kx.CodePeer, kx.CodeTimeout, kx.CodeNet:
			t.Instant(kx.CodeOf(err).String(), end, msg)
		}
	}
	if seq%flushCalls == 0 {
		t.letWriterRun()
	}
}

// flushCalls: the writer is let in after every flushCalls-th collective (by sequence number),
// besides every flushEvery and when a buffer is half full. A batch of this many small calls'
// events takes the writer about 0.4 ms here: fewer, larger batches pay the hand-over of the
// processor (about 25 µs each way) less often; the batch stays within half a buffer for calls
// of up to two events.
const flushCalls = 2048

// letWriterRun wakes the writer and yields the processor to it, when it has events to write.
// Every rank does so at the end of the same collectives (sequence numbers are the job's), so
// their pauses overlap. Woken at each rank's own moment (its clock, its buffer half full), one
// rank's pause would hold up the others at their next exchange and the ranks' pauses would add
// up: with GOMAXPROCS=1 (kylixrun) the writer gets the processor only when a call gives it up,
// and a call that comes back meanwhile waits for the writer's whole batch. The call does not
// wait for the disk: a writer blocked in the file system gives the processor back as any
// blocked system call does (and a writer still at work is not waited for).
func (t *Tracer) letWriterRun() {
	t.mu.Lock()
	pending := len(t.buf) > 0 && t.spare != nil
	t.mu.Unlock()
	if pending {
		t.wake()
		runtime.Gosched()
	}
}

// Step records a phase of layer of collective seq.
func (t *Tracer) Step(seq uint64, s Step, layer int, start, end int64) {
	e := Event{Kind: kindStep, Name: s.String(), TS: start, Dur: end - start, Seq: seq, Layer: int16(layer)}
	t.record(&e)
}

// Message records a send or a receive of n bytes to or from peer (a wait when receiving).
func (t *Tracer) Message(tag kx.Tag, peer, n int, sent bool, start, end int64, err error) {
	var msg string
	if err != nil {
		msg = err.Error()
	}
	t.mu.Lock() // written in place, as Call's
	if e := t.slot(); e != nil {
		e.Kind, e.Name, e.TS, e.Dur, e.Seq, e.Layer = kindWait, "wait", start, end-start, tag.Seq, int16(tag.Layer)
		e.Phase, e.Peer, e.N[0], e.Msg = tag.Phase, int32(peer), int64(n), msg
		if sent {
			e.Kind, e.Name = kindSend, "send"
		}
	}
	t.release()
}

// Instant records a moment worth seeing: a failure, a resize, a link probe's result.
func (t *Tracer) Instant(name string, at int64, detail string) {
	e := Event{Kind: kindInstant, Name: name, TS: at, Msg: detail}
	t.record(&e)
}

// counterEvery is the bytes counter's sampling period: a small step's every call would
// otherwise add an event.
const counterEvery = int64(time.Millisecond)

// Counter records the bytes moved so far per layer (layers of them; perLayer is the
// caller's, kept up to date under its own lock), at most once every counterEvery; Close
// records the last value. A call that is not due takes no lock: it notes where the counts
// are, which changes only when another comm's recorder calls.
func (t *Tracer) Counter(at int64, perLayer *[MaxCounterLayers]int64, layers int) {
	if t.counterSrc.Load() != perLayer {
		t.counterSrc.Store(perLayer)
	}
	if int64(layers) != t.counterLayers.Load() {
		t.counterLayers.Store(int64(layers))
	}
	if last := t.counterAt.Load(); at-last < counterEvery && last != 0 {
		return
	}
	t.mu.Lock()
	if last := t.counterAt.Load(); at-last >= counterEvery || last == 0 { // not taken meanwhile
		t.counterAt.Store(at)
		t.counterN = *perLayer
		if e := t.slot(); e != nil {
			e.Kind, e.Name, e.TS, e.N, e.Layer = kindCounter, "bytes", at, t.counterN, int16(min(layers, MaxCounterLayers))
		}
	}
	t.release()
}

// ---- the caller's marks (kylix_mark) ---------------------------------------------------------

// Mark kinds, as include/kylix.h numbers them.
const (
	MarkInstant = 0
	MarkBegin   = 1
	MarkEnd     = 2
)

// Mark records the caller's span or instant. END closes the innermost open span, which must
// have the same name; anything else is CodeState.
func (t *Tracer) Mark(name string, kind int) error {
	now := t.Now()
	switch kind {
	case MarkInstant:
		t.record(&Event{Kind: kindMarkNow, Name: name, TS: now})
	case MarkBegin:
		t.mu.Lock()
		defer t.mu.Unlock()
		if len(t.spans) >= maxOpenSpans {
			return kx.Errorf(kx.CodeState, "name: %q would be the %dth open span (at most %d: END the inner ones first)", name, len(t.spans)+1, maxOpenSpans)
		}
		t.spans = append(t.spans, openSpan{name, now})
	case MarkEnd:
		t.mu.Lock()
		n := len(t.spans)
		if n == 0 {
			t.mu.Unlock()
			return kx.Errorf(kx.CodeState, "name: END of %q without a BEGIN", name)
		}
		if top := t.spans[n-1]; top.name != name {
			t.mu.Unlock()
			return kx.Errorf(kx.CodeState, "name: END of %q, but the innermost open span is %q", name, top.name)
		}
		s := t.spans[n-1]
		t.spans = t.spans[:n-1]
		t.mu.Unlock()
		t.record(&Event{Kind: kindMark, Name: s.name, TS: s.ts, Dur: now - s.ts})
	default:
		return kx.Errorf(kx.CodeArg, "kind: %d is not KYLIX_MARK_INSTANT, _BEGIN or _END", kind)
	}
	return nil
}
