package mailbox

import (
	"kylix/core/kx"
	"testing"
	"time"
)

// A Recv's wait tells the driver which frame it waits for, and takes the payload the driver
// hands over; a frame that is not the one wanted is filed as usual; a payload handed over for a
// collective that failed meanwhile is dropped and the failure returned.
func TestDriverHandsOverTheWantedFrame(t *testing.T) {
	tag := kx.Tag{FP: fpAll, Seq: 4, Layer: 2, Phase: kx.PhaseSmall}
	t.Run("handed over", func(t *testing.T) {
		m := New(0, 2, time.Second)
		m.Begin(4, fpAll)
		var saw Want
		m.SetDriver(func(srcs []int, woken <-chan struct{}, until time.Time, want *Want) bool {
			if want == nil || !want.Matches(1, kx.Tag{Seq: 4, Layer: 2, Phase: kx.PhaseSmall, FP: fpAll}) ||
				want.Matches(1, kx.Tag{Seq: 4, Layer: 3, Phase: kx.PhaseSmall, FP: fpAll}) ||
				want.Matches(1, kx.Tag{Seq: 4, Layer: 2, Phase: kx.PhaseSmall, FP: fpRed}) {
				t.Errorf("want %+v does not name the awaited frame alone", want)
				return false
			}
			saw = *want
			want.Data = []byte("direct")
			return true
		})
		within(t, time.Second, func() {
			b, err := m.Recv(1, tag)
			if err != nil || string(b) != "direct" {
				t.Fatalf("recv: %q, %v", b, err)
			}
		})
		if saw.Src != 1 {
			t.Fatalf("want named source %d", saw.Src)
		}
	})
	t.Run("other frames filed", func(t *testing.T) {
		m := New(0, 2, time.Second)
		m.Begin(4, fpAll)
		m.SetDriver(func(srcs []int, woken <-chan struct{}, until time.Time, want *Want) bool {
			m.deliver(1, 4, 2, kx.PhaseSmall, fpAll, []byte("filed")) // as Receive files it
			<-woken
			return true
		})
		within(t, time.Second, func() {
			if b, err := m.Recv(1, tag); err != nil || string(b) != "filed" {
				t.Fatalf("recv: %q, %v", b, err)
			}
		})
	})
	t.Run("collective failed", func(t *testing.T) {
		m := New(0, 3, time.Second)
		m.Begin(4, fpAll)
		m.SetDriver(func(srcs []int, woken <-chan struct{}, until time.Time, want *Want) bool {
			m.deliver(2, 4, 0, kx.PhaseSmall, fpRed, []byte("x")) // another rank's mismatch
			want.Data = []byte("late")
			return true
		})
		within(t, time.Second, func() {
			_, err := m.Recv(1, tag)
			wantErr(t, err, kx.CodeMismatch, "rank 2")
		})
	})
}
