package core

import (
	"fmt"
	"kylix/core/planning"
	"kylix/core/stats"
	"kylix/core/trace"
)

// The comm's timeline (option timeline, core/trace): its recorder (core/stats) gets every call
// and message from the data path; the algorithms add their phases with step, one line each.

// SetTimeline attaches t (nil: none) to the comm's recorder; call it before the first
// collective. Comms made from this one (shrink, resize) need their own SetTimeline. A transport
// that reports stalled waits (netio's) gives them to the timeline as instants too.
func (c *Comm) SetTimeline(t *trace.Tracer) {
	c.rec.SetTracer(t)
	if n, ok := c.v.Transport().(stallNoter); ok && t != nil {
		n.NoteStalls(func(msg string) { c.rec.Instant("stall", msg) })
	}
}

// stallNoter is a transport that can hand its stall reports to the timeline.
type stallNoter interface{ NoteStalls(note func(msg string)) }

// Timeline is the attached timeline, or nil.
func (c *Comm) Timeline() *trace.Tracer { return c.rec.Tracer() }

// TimelineNote records an instant on the timeline (a resize, a shrink); nothing when off.
func (c *Comm) TimelineNote(name, detail string) { c.rec.Instant(name, detail) }

// The phases the algorithms mark with c.rec.Step(seq, step, layer), one line each: a nil test
// when the timeline is off.
const (
	stepFill      = trace.StepFill
	stepCombine   = trace.StepCombine
	stepGather    = trace.StepGather
	stepSort      = trace.StepSort
	stepMerge     = trace.StepMerge
	stepPartition = trace.StepPartition
)

// noteLinks records the link probe's result (nil: nothing was measured).
func noteLinks(rec *stats.Recorder, l *planning.Links) {
	if l == nil || rec.Tracer() == nil {
		return
	}
	rec.Instant("links measured", fmt.Sprintf("overhead %.1f µs, %.2f GB/s, min_packet %d bytes, %d links, probe %.1f ms",
		l.OverheadS*1e6, l.BytesPerSec/1e9, l.MinPacket, l.Measured, l.ProbeS*1e3))
}

// notePack records config's compression decision for its layer-0 members, when it
// compresses for any.
func notePack(rec *stats.Recorder, pack []bool) {
	if rec.Tracer() == nil {
		return
	}
	var to []int
	for g, on := range pack {
		if on {
			to = append(to, g)
		}
	}
	if len(to) > 0 {
		rec.Instant("compress", fmt.Sprintf("index lists to layer-0 members %v go lz4-compressed", to))
	}
}
