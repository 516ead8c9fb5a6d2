package kx

import (
	"sort"
	"strings"
)

// otherEnv are the KYLIX_ variables that are not options: read by the library itself
// (NOSIMD: the SIMD level; STALL_MS: the stall report's period; LAUNCHER: LauncherEnv) or by
// the project's bindings, launcher, tools and benchmarks (LIBRARY, BUILD, BUILDS, JAR, INCLUDE,
// TOOL, PYENV, SPARK_MASTER).
var otherEnv = []string{"NOSIMD", "STALL_MS", "LAUNCHER", "LIBRARY", "BUILD", "BUILDS", "JAR", "INCLUDE",
	"TOOL", "PYENV", "SPARK_MASTER"}

// LauncherEnv is set by kylixrun for the processes it starts: it reported the job's unknown
// KYLIX_ variables itself.
const LauncherEnv = "KYLIX_LAUNCHER"

// ReportsUnknownEnv tells whether the process of rank reports the unknown KYLIX_ variables
// (UnknownEnv): once per job, by kylixrun when it launched the job, else by rank 0.
func ReportsUnknownEnv(rank int, getenv func(string) string) bool {
	return rank == 0 && getenv(LauncherEnv) == ""
}

// UnknownEnv returns a warning for every KYLIX_ variable in environ (KEY=value entries) that is
// neither an option nor one of the library's other variables, naming the nearest known name:
// a misspelled variable would otherwise be ignored in silence, while a misspelled key in the
// options string is refused.
func UnknownEnv(environ []string) []string {
	known := map[string]bool{}
	var names []string
	for _, k := range optionKeys {
		names = append(names, "KYLIX_"+strings.ToUpper(k))
	}
	for _, k := range otherEnv {
		names = append(names, "KYLIX_"+k)
	}
	for _, n := range names {
		known[n] = true
	}
	var warns []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "KYLIX_") || known[k] {
			continue
		}
		w := "environment variable " + k + " is not a Kylix setting and is ignored"
		if near := nearest(k, names); near != "" {
			w += " (did you mean " + near + "?)"
		}
		warns = append(warns, w)
	}
	sort.Strings(warns)
	return warns
}

// nearest is the name of names closest to s by edit distance, if it is close enough to be a
// likely typo (at most a third of s's length away).
func nearest(s string, names []string) string {
	best, bestD := "", len(s)/3+1
	for _, n := range names {
		if d := EditDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b (bytes), with an adjacent swap
// counting one: how far a typed name is from a known one.
func EditDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
