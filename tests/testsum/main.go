// Command testsum makes `make test` talkative and countable.
//
//	go test -json ./... | testsum go [-name go] [-counts FILE] [-every 30s]
//	testsum total [NAME=]PATTERN...
//	testsum progress -name NAME -file FILE [-every 30s] [-slow 5s]
//
// `testsum go` prints go test's usual lines (the full output of a failing test, `ok  pkg 1.2s`,
// `FAIL pkg`) plus each package's pass/fail/skip counts as it finishes, and a line saying what
// still runs whenever nothing was printed for -every, so a long package is never silent.
// `testsum total` adds up counts files (written by -counts) and JUnit XML reports (pytest's
// --junitxml, Maven Surefire's TEST-*.xml) and ends with a plain `N passed, N failed, N skipped`.
// `testsum progress` follows the progress file of a suite whose output goes to a log: slow and
// failed tests as they end, downloads with their size and time, and the test that runs now
// whenever it printed nothing for -every (progress.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "go":
		os.Exit(runGo(os.Args[2:], os.Stdin, os.Stdout))
	case "total":
		os.Exit(runTotal(os.Args[2:], os.Stdout))
	case "progress":
		os.Exit(runProgress(os.Args[2:], os.Stdout))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go test -json ./... | testsum go [-name go] [-counts FILE] [-every 30s]\n       testsum total [NAME=]PATTERN...\n       testsum progress -name NAME -file FILE [-every 30s] [-slow 5s]")
	os.Exit(2)
}
