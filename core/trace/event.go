package trace

import (
	"encoding/binary"
	"kylix/core/kx"
	"math/bits"
	"unicode/utf8"
)

// What an Event records; each kind has its own arguments in the file.
const (
	kindCall    = iota + 1 // a collective: one C call
	kindStep               // a phase of a layer inside a call (fill, combine, gather, sort, merge, partition)
	kindWait               // a receive: the time until a peer's message landed
	kindSend               // a send (on the send lane: large sends run beside the caller)
	kindMark               // the caller's span (kylix_mark BEGIN..END)
	kindMarkNow            // the caller's instant (kylix_mark INSTANT)
	kindInstant            // the library's instant: a failure, a resize, a link probe's result
	kindCounter            // bytes per layer so far
)

// Lanes (Chrome "threads") of a rank's process.
const (
	laneCalls = 0 // calls, their phases and waits, nested
	laneSends = 1
	laneUser  = 2
)

var laneNames = [...]string{"calls", "sends", "user"}

// MaxCounterLayers is how many layers the bytes counter tracks apart.
const MaxCounterLayers = 6

// InlineSteps is how many phases a short call carries in its own event (args "steps") instead
// of one event each: a small step's call would otherwise cost the writer four events.
// `kylix timeline` turns them back into nested events.
const InlineSteps = 4

// InlineStep packs a phase of a call for Event.Steps in one word: its start after the call's
// and its duration (ns, each at most MaxInline), the step and its layer. A call carries its
// phases inline only when shorter than that (core/stats: 200 µs). One word, not two: the
// event's copy into the buffer and the writer's read of it are a cache line shorter.
func InlineStep(startRel, dur int64, s Step, layer int) int64 {
	return startRel<<40 | dur<<16 | int64(s)<<8 | int64(uint8(layer))
}

// MaxInline bounds an inline phase's start and duration (ns): about 8 ms.
const MaxInline = 1<<23 - 1

// UnpackStep is InlineStep's inverse.
func UnpackStep(w int64) (startRel, dur int64, s Step, layer int) {
	return w >> 40, w >> 16 & (1<<24 - 1), Step(w >> 8 & 0xff), int(w & 0xff)
}

// Event is one record in the buffer: fixed size, no pointers but two strings the caller
// already holds, so recording one allocates nothing.
type Event struct {
	TS, Dur int64 // local clock, ns
	Name    string
	Msg     string // a failure's message, an instant's detail
	Seq     uint64
	FP      kx.Fingerprint
	N       [MaxCounterLayers]int64
	Steps   [InlineSteps]int64 // a call's inline phases (InlineStep), 0 after the last
	Peer    int32
	Layer   int16
	Kind    uint8
	Phase   kx.Phase // a message's phase (wait, send)
}

// Step names a phase of a layer that core's algorithms report (the rest, send and wait, come
// from the data path itself).
type Step uint8

const (
	StepFill      Step = iota + 1 // reduce: the caller's values into the layer-0 vector
	StepCombine                   // reduce going down: the members' slices combined
	StepGather                    // reduce going up: answers gathered for the members and the caller
	StepSort                      // config: keys hashed, sorted and made unique
	StepMerge                     // config: the members' sorted lists merged
	StepPartition                 // config: keys split among the layer's members (and sent)
)

var stepNames = [...]string{"", "fill", "combine", "gather", "sort", "merge", "partition"}

func (s Step) String() string {
	if int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "step"
}

// callNames are the calls' event names by collective kind, as the C ABI names them.
var callNames = [...]string{"kylix_reject", "kylix_config", "kylix_reduce", "kylix_config_reduce",
	"kylix_allreduce", "kylix_bcast", "kylix_barrier", "kylix_mix", "agree", "links"}

// CallName is the event name of a collective of kind k.
func CallName(k kx.Kind) string {
	if int(k) < len(callNames) {
		return callNames[k]
	}
	return "collective"
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ { // the library's own names need no escaping: one copy
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return appendJSONEscaped(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendJSONEscaped(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// digits2 is "00".."99": two digits a step.
const digits2 = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// upTo999 is 0..999 in decimal, little-endian in a word: the digits in the low three bytes,
// their count in the top one. frac3 is the same three digits after a '.' (always three).
// The writer's numbers are mostly small (a phase's start and duration, a call's duration in
// µs), and a table look-up and one 4-byte store is the cheapest way to write them.
var upTo999, frac3 = func() (n, f [1000]uint32) {
	for v := range n {
		d := [3]uint32{uint32(v / 100), uint32(v / 10 % 10), uint32(v % 10)}
		switch {
		case v < 10:
			n[v] = '0' + d[2] | 1<<24
		case v < 100:
			n[v] = '0' + d[1] | ('0'+d[2])<<8 | 2<<24
		default:
			n[v] = '0' + d[0] | ('0'+d[1])<<8 | ('0'+d[2])<<16 | 3<<24
		}
		f[v] = '.' | ('0'+d[0])<<8 | ('0'+d[1])<<16 | ('0'+d[2])<<24
	}
	return
}()

// append4 appends the n (1-4) low bytes of w, little-endian: one store.
func append4(b []byte, w uint32, n int) []byte {
	b = binary.LittleEndian.AppendUint32(b, w)
	return b[:len(b)-4+n]
}

// appendUint appends v in decimal (strconv.AppendUint's output; the writer formats a dozen
// numbers an event, and this is its most frequent step), two digits a step, in place.
func appendUint(b []byte, v uint64) []byte {
	if v < 1000 {
		w := upTo999[v]
		return append4(b, w, int(w>>24))
	}
	n := int(bits.Len64(v)*1233) >> 12 // digits − 1 or digits, as log10 from log2
	if v >= pow10[n] {
		n++
	}
	l := len(b)
	b = append(b, "00000000000000000000"[:n]...)
	d := b[l : l+n]
	i := n
	for v >= 100 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		d[i], d[i+1] = digits2[r], digits2[r+1]
		v = q
	}
	if v >= 10 {
		d[i-2], d[i-1] = digits2[v*2], digits2[v*2+1]
	} else {
		d[i-1] = byte('0' + v)
	}
	return b
}

var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19}

func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		return appendUint(append(b, '-'), uint64(-v))
	}
	return appendUint(b, uint64(v))
}

// appendMicros appends ns as microseconds with three decimals (the format's unit).
func appendMicros(b []byte, ns int64) []byte {
	v := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		v = uint64(-ns)
	}
	q, f := v/1000, v%1000
	if q < 1000 {
		w := upTo999[q]
		b = append4(b, w, int(w>>24))
	} else {
		b = appendUint(b, q)
	}
	return binary.LittleEndian.AppendUint32(b, frac3[f])
}

// appendKey appends `,"k":v`; k is given with its punctuation, as `,"k":`.
func appendKey(b []byte, k string, v int64) []byte {
	return appendInt(append(b, k...), v)
}

func appendStrKey(b []byte, k, v string) []byte {
	return appendJSONString(append(b, k...), v)
}

// encoder is the writer's: the opening of an event's line up to its time, which depends only
// on its name, kind and the rank, kept for the last few (name, kind) pairs: the library's
// events have a handful of names.
type encoder struct {
	pid  int
	next int
	ents [8]struct {
		name string
		kind uint8
		head []byte
	}
	steps [2][len(stepNames)][8][]byte // stepHead's: [not first][step][layer]
	call  struct {                     // callArgs's
		fp kx.Fingerprint
		n  [5]int64
		b  []byte
	}
}

// callArgs is a call's arguments from its plan to its status, as the last call with the same
// ones wrote them: a small step repeats them call after call, and formatting them was a third
// of the writer's work for its event.
func (c *encoder) callArgs(e *Event) []byte {
	a := &c.call
	n := [5]int64(e.N[:5])
	if a.b != nil && a.fp == e.FP && a.n == n {
		return a.b
	}
	a.fp, a.n = e.FP, n
	b := a.b[:0]
	if e.FP.Plan != 0 {
		b = appendKey(b, `,"plan":`, int64(e.FP.Plan))
	}
	if e.FP.Dtype != 0 {
		b = appendStrKey(b, `,"dtype":`, kx.Dtype(e.FP.Dtype).String())
		b = appendStrKey(b, `,"op":`, kx.Op(e.FP.Op).String())
		b = appendKey(b, `,"width":`, int64(e.FP.Width))
	}
	if e.FP.Count != 0 {
		b = appendKey(b, `,"count":`, e.FP.Count)
	}
	if e.N[2] > 0 || e.N[3] > 0 {
		b = appendKey(b, `,"keys_out":`, e.N[2])
		b = appendKey(b, `,"keys_in":`, e.N[3])
	}
	b = appendKey(b, `,"bytes_sent":`, e.N[0])
	b = appendKey(b, `,"bytes_recv":`, e.N[1])
	a.b = appendStrKey(b, `,"status":`, kx.Code(e.N[4]).String())
	return a.b
}

// stepHead is an inline phase's opening, `["combine",0,` (after a comma unless first), kept
// for the first layers' phases.
func (c *encoder) stepHead(comma bool, s Step, layer int) []byte {
	k := 0
	if comma {
		k = 1
	}
	if int(s) < len(stepNames) && layer < len(c.steps[k][s]) {
		if h := c.steps[k][s][layer]; h != nil {
			return h
		}
	}
	h := append([]byte(",")[:k], `["`...)
	h = append(h, s.String()...)
	h = append(h, `",`...)
	h = appendInt(h, int64(layer))
	h = append(h, ',')
	if int(s) < len(stepNames) && layer < len(c.steps[k][s]) {
		c.steps[k][s][layer] = h
	}
	return h
}

func (c *encoder) head(e *Event, ph, tid byte) []byte {
	for i := range c.ents {
		if h := &c.ents[i]; h.kind == e.Kind && h.head != nil && h.name == e.Name {
			return h.head
		}
	}
	h := &c.ents[c.next]
	c.next = (c.next + 1) % len(c.ents)
	b := append(h.head[:0], `{"name":`...)
	b = appendJSONString(b, e.Name)
	b = append(b, `,"ph":"`...)
	b = append(b, ph)
	b = append(b, `","pid":`...)
	b = appendInt(b, int64(c.pid))
	b = append(b, `,"tid":`...)
	b = append(b, tid)
	b = append(b, `,"ts":`...)
	h.name, h.kind, h.head = e.Name, e.Kind, b
	return b
}

// encode appends e as one line of the file: a JSON object, a comma, a newline. Times stay on
// the local clock: the file's clock record (origin_unix_ns) carries the offset to rank 0's, so
// an event written before the clocks were aligned lands where one written after does.
func (e *Event) encode(b []byte, c *encoder) []byte {
	ph, tid := byte('X'), byte('0'+laneCalls)
	switch e.Kind {
	case kindSend:
		tid = '0' + laneSends
	case kindMark:
		tid = '0' + laneUser
	case kindMarkNow:
		ph, tid = 'i', '0'+laneUser
	case kindInstant:
		ph = 'i'
	case kindCounter:
		ph = 'C'
	}
	b = append(b, c.head(e, ph, tid)...)
	b = appendMicros(b, e.TS)
	if ph == 'X' {
		b = append(b, `,"dur":`...)
		b = appendMicros(b, e.Dur)
	}
	if ph == 'i' {
		b = append(b, `,"s":"t"`...)
	}
	if e.Kind == kindCall { // the one event of most calls: its arguments start without a comma
		b = append(b, `,"args":{"seq":`...)
		b = appendUint(b, e.Seq)
		b = append(b, c.callArgs(e)...)
		if e.Msg != "" {
			b = appendStrKey(b, `,"error":`, e.Msg)
		}
		if e.Steps[0] != 0 {
			b = append(b, `,"steps":[`...)
			for i := 0; i < len(e.Steps) && e.Steps[i] != 0; i++ {
				start, dur, st, layer := UnpackStep(e.Steps[i])
				b = append(b, c.stepHead(i > 0, st, layer)...)
				b = appendMicros(b, start)
				b = append(b, ',')
				b = appendMicros(b, dur)
				b = append(b, ']')
			}
			b = append(b, ']')
		}
		return append(b, "}},\n"...)
	}
	b = append(b, `,"args":{`...)
	mark := len(b)
	switch e.Kind {
	case kindStep:
		b = appendKey(b, `,"seq":`, int64(e.Seq))
		b = appendKey(b, `,"layer":`, int64(e.Layer))
	case kindWait, kindSend:
		b = appendKey(b, `,"seq":`, int64(e.Seq))
		b = appendKey(b, `,"layer":`, int64(e.Layer))
		b = appendStrKey(b, `,"phase":`, e.Phase.String())
		b = appendKey(b, `,"peer":`, int64(e.Peer))
		b = appendKey(b, `,"bytes":`, e.N[0])
		if e.Msg != "" {
			b = appendStrKey(b, `,"error":`, e.Msg)
		}
	case kindInstant:
		if e.Msg != "" {
			b = appendStrKey(b, `,"detail":`, e.Msg)
		}
	case kindCounter:
		for l := 0; l < int(e.Layer) && l < MaxCounterLayers; l++ {
			b = appendKey(b, layerKeys[l], e.N[l])
		}
	}
	if len(b) > mark && b[mark] == ',' { // the first argument's comma
		copy(b[mark:], b[mark+1:])
		b = b[:len(b)-1]
	}
	return append(b, "}},\n"...)
}

var layerKeys = [MaxCounterLayers]string{`,"L0":`, `,"L1":`, `,"L2":`, `,"L3":`, `,"L4":`, `,"L5":`}
