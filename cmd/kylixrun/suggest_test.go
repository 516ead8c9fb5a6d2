package main

import (
	"errors"
	"kylix/core/kx"
	"os"
	"regexp"
	"strings"
	"testing"
)

// A mistyped option gets the nearest one, with two dashes, whichever way it was typed.
func TestUnknownFlagSuggestion(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-n 2 --tag-ouput prog", "unknown option --tag-ouput (did you mean --tag-output?)"},
		{"-n 2 -tagoutput prog", "unknown option --tagoutput (did you mean --tag-output?)"},
		{"--replicaton 2 -n 2 prog", "(did you mean --replication?)"},
		{"-n 2 --keepgoing prog", "(did you mean --keep-going?)"},
		{"-n 2 --job-timout 3 prog", "(did you mean --job-timeout?)"},
		{"-n 2 --hostfle f prog", "(did you mean --hostfile?)"},
		{"-n 2 --rendezvous h prog", "(did you mean --rendezvous-host?)"},
		{"-n 2 --verison prog", "(did you mean --version?)"},
	} {
		_, err := parseArgs(strings.Fields(tc.args))
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v; want a usage error containing %q", tc.args, err, tc.want)
		}
	}
	_, err := parseArgs(strings.Fields("-n 2 --frobnicate prog"))
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("--frobnicate: %v; want no suggestion (nothing is near)", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3},
		{"tag-ouput", "tag-output", 1}, {"ab", "ba", 1}} {
		if got := kx.EditDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("kx.EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// --version prints the header's version: the constant cannot drift from include/kylix.h.
func TestVersionMatchesHeader(t *testing.T) {
	h, err := os.ReadFile("../../include/kylix.h")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, k := range []string{"MAJOR", "MINOR", "PATCH"} {
		m := regexp.MustCompile(`#define KYLIX_VERSION_` + k + ` (\d+)`).FindSubmatch(h)
		if m == nil {
			t.Fatalf("no KYLIX_VERSION_%s in kylix.h", k)
		}
		parts = append(parts, string(m[1]))
	}
	if want := strings.Join(parts, "."); version != want {
		t.Errorf("kylixrun version %q, kylix.h says %q", version, want)
	}
	if _, err := parseArgs([]string{"--version"}); !errors.Is(err, errVersion) {
		t.Errorf("parseArgs(--version) = %v, want errVersion", err)
	}
}
