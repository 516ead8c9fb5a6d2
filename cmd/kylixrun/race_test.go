//go:build race

package main

// Under -race the launcher the tests run is built with -race too.
func init() { buildFlags = append(buildFlags, "-race") }
