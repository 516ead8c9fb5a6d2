// Package tests holds the multi-process tests of Kylix: C programs in c/ (written against
// include/kylix.h) compiled and run under kylixrun over loopback TCP by the Go
// test driver in this directory. Run with `go test ./tests` from the repository root; set
// KYLIX_BUILD to a directory holding libkylix.so and kylixrun to skip building them.
package tests
