package main

import (
	"flag"
	"strings"
)

// unknownFlag rewrites the flag package's complaint about an undefined flag into one that
// names, written with two dashes as the help does, the defined flag nearest to what was typed.
func unknownFlag(fs *flag.FlagSet, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return &usageError{err.Error()}
	}
	if near := nearestFlag(fs, name); near != "" {
		return usagef("unknown option --%s (did you mean --%s?)", name, near)
	}
	return usagef("unknown option --%s", name)
}

// nearestFlag is the defined flag name closest to name in edit distance, if close enough to be
// a slip (at most a third of its letters, at least one), or the one flag name starts.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 1+len(name)/3
	var prefixOf []string
	fs.VisitAll(func(f *flag.Flag) {
		if len(f.Name) < 2 {
			return // -n, -h: any short typo would be one edit away
		}
		if strings.HasPrefix(f.Name, name) {
			prefixOf = append(prefixOf, f.Name)
		}
		if d := editDistance(name, f.Name); d < bestD || (d == bestD && best == "") {
			best, bestD = f.Name, d
		}
	})
	if best == "" && len(prefixOf) == 1 {
		return prefixOf[0]
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, with an adjacent swap counting one.
func editDistance(a, b string) int {
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
