package main

import (
	"flag"
	"kylix/core/kx"
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
		if d := kx.EditDistance(name, f.Name); d < bestD || (d == bestD && best == "") {
			best, bestD = f.Name, d
		}
	})
	if best == "" && len(prefixOf) == 1 {
		return prefixOf[0]
	}
	return best
}
