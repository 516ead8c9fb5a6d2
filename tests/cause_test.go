package tests

import (
	"fmt"
	"regexp"
	"testing"
)

// The launcher names the rank whose failure started the job's end, and why, although other
// ranks exit first: a rank whose call was rejected (bad argument), and a rank that
// stopped (SIGSTOP) and was declared lost by its peers. On 2x2 degrees not every rank talks to
// the culprit directly, so some blame the peer that told them; the launcher follows that.
func TestLauncherNamesCause(t *testing.T) {
	for _, c := range []struct {
		mode    string
		culprit int
		why     string // in the cause line
	}{
		{"badarg", 1, "kylix_reduce: out_vals is NULL"},
		{"sigstop", 0, "rank 0 is lost"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			r := run(t, job{N: 4, Degrees: "2x2", Prog: "cause", Args: []string{c.mode, fmt.Sprint(c.culprit)}})
			if r.Code != 1 {
				t.Errorf("launcher exit code %d, want 1 (the first failing rank's)\n%s", r.Code, r.dump())
			}
			// The scenario: another rank exits first, and is not called the cause. The others
			// may have exited meanwhile: the launcher counts those still running.
			exit := regexp.MustCompile(`(?m)Z kylixrun: rank (\d) \(pid \d+\) exited with status 1; stopping the [1-3] other ranks?$`).FindStringSubmatch(r.Output)
			if exit == nil || exit[1] == fmt.Sprint(c.culprit) {
				t.Fatalf("want a rank other than %d to exit first and the launcher to say so\n%s", c.culprit, r.dump())
			}
			cause := regexp.MustCompile(fmt.Sprintf(`(?m)Z kylixrun: rank %d \(pid \d+\) caused the failure[^\n]*%s`,
				c.culprit, regexp.QuoteMeta(c.why)))
			if !cause.MatchString(r.Output) {
				t.Errorf("the launcher does not name rank %d as the cause with %q\n%s", c.culprit, c.why, r.dump())
			}
			if n := len(regexp.MustCompile(`kylixrun: rank \d \(pid \d+\) caused`).FindAllString(r.Output, -1)); n != 1 {
				t.Errorf("%d cause lines, want 1\n%s", n, r.dump())
			}
		})
	}
}
