package main

import (
	"bytes"
	"flag"
	"fmt"
	"kylix/core/kx"
	"os"
	"regexp"
	"strings"
	"testing"
)

// tool runs the kylix tool in process: its stdout, stderr and exit status.
func tool(args ...string) (string, string, int) {
	var out, errs bytes.Buffer
	code := run(args, &out, &errs)
	return out.String(), errs.String(), code
}

func TestVersionMatchesHeader(t *testing.T) {
	h, err := os.ReadFile("../../include/kylix.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)KYLIX_VERSION_MAJOR (\d+).*?KYLIX_VERSION_MINOR (\d+).*?KYLIX_VERSION_PATCH (\d+)`).FindSubmatch(h)
	if m == nil {
		t.Fatal("no KYLIX_VERSION_MAJOR, _MINOR and _PATCH in kylix.h")
	}
	want := fmt.Sprintf("kylix %s.%s.%s\n", m[1], m[2], m[3])
	for _, arg := range []string{"--version", "-version", "version"} {
		if out, errs, code := tool(arg); code != 0 || out != want || errs != "" {
			t.Errorf("kylix %s: exit %d, stdout %q, stderr %q; want %q", arg, code, out, errs, want)
		}
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	if len(commands) < 3 {
		t.Fatalf("only %d commands registered", len(commands))
	}
	for _, arg := range []string{"-h", "--help", "help"} {
		out, _, code := tool(arg)
		if code != 0 {
			t.Errorf("kylix %s: exit %d", arg, code)
		}
		for name, c := range commands {
			if !strings.Contains(out, "  "+name+" ") || !strings.Contains(out, c.Purpose) {
				t.Errorf("kylix %s does not list %s with its purpose:\n%s", arg, name, out)
			}
		}
		if !strings.Contains(out, "--version") {
			t.Errorf("kylix %s does not mention --version:\n%s", arg, out)
		}
	}
	// No command at all: the list on stderr, a usage status.
	if _, errs, code := tool(); code != 2 || !strings.Contains(errs, "commands:") {
		t.Errorf("kylix alone: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := tool("plna"); code != 2 || !strings.Contains(errs, "did you mean plan?") {
		t.Errorf("kylix plna: exit %d, stderr %q", code, errs)
	}
}

// Every command's -h (and --help, and kylix help NAME): its usage line, purpose, every flag
// written with two dashes and its default when it has one, and an example; exit 0, nothing on
// stderr.
func TestEveryCommandHelp(t *testing.T) {
	for name, c := range commands {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{{name, "-h"}, {name, "--help"}, {"help", name}} {
				out, errs, code := tool(args...)
				if code != 0 || errs != "" {
					t.Fatalf("kylix %s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
				}
				if !strings.HasPrefix(out, "usage: kylix "+name+" ") {
					t.Errorf("kylix %s: no usage line:\n%s", strings.Join(args, " "), out)
				}
				ex := out[strings.LastIndex(out, "\nexample:\n"):]
				if !strings.Contains(ex, "kylix "+name) {
					t.Errorf("kylix %s: no example running the command:\n%s", strings.Join(args, " "), out)
				}
				flat := strings.Join(strings.Fields(out), " ")
				if !strings.Contains(flat, strings.Join(strings.Fields(c.Purpose[1:]), " ")) {
					t.Errorf("kylix %s: the purpose is missing:\n%s", strings.Join(args, " "), out)
				}
				fs, _ := c.newFlagSet()
				fs.VisitAll(func(f *flag.Flag) {
					at := strings.Index(out, "  --"+f.Name+" ")
					if at < 0 {
						at = strings.Index(out, "  --"+f.Name+"\n")
					}
					if at < 0 {
						t.Errorf("kylix %s -h does not list --%s:\n%s", name, f.Name, out)
						return
					}
					// The flag's text runs up to the next flag or the example.
					text := out[at+2:]
					if next := regexp.MustCompile(`\n  (--|\nexample)`).FindStringIndex(text); next != nil {
						text = text[:next[0]]
					}
					text = strings.Join(strings.Fields(text), " ")
					if !isZeroDefault(f) && !c.required(f.Name) && !strings.Contains(text, "(default ") {
						t.Errorf("kylix %s -h: --%s does not give its default %s: %q", name, f.Name, f.DefValue, text)
					}
				})
			}
		})
	}
}

// Run without its flags, plan names them as the user types them, never the library's
// internal names.
func TestPlanWithoutFlagsNamesFeatures(t *testing.T) {
	for _, cmd := range []string{"plan", "simulate"} {
		out, errs, code := tool(cmd)
		if code != 2 || out != "" {
			t.Errorf("kylix %s: exit %d, stdout %q", cmd, code, out)
		}
		for _, want := range []string{"--features N", "--density D", "--ranks M", "kylix " + cmd + " -h"} {
			if !strings.Contains(errs, want) {
				t.Errorf("kylix %s: stderr lacks %q: %q", cmd, want, errs)
			}
		}
		if strings.Contains(errs, "nFeatures") {
			t.Errorf("kylix %s names an internal argument: %q", cmd, errs)
		}
	}
}

// A mistake names the flag as typed, with two dashes, and says what it wants.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	base := []string{"plan", "--features", "1e6", "--density", "0.1", "--ranks", "8"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--featurs", "1e6"}, "unknown flag --featurs (did you mean --features?)"},
		{[]string{"plan", "--features", "many"}, `--features "many": want a number`},
		{[]string{"plan", "--ranks", "4.5"}, `--ranks "4.5": want a whole number`},
		{[]string{"plan", "--features"}, "--features needs a value: --features N"},
		{[]string{"plan", "--features", "0", "--density", "0.1", "--ranks", "8"}, "--features 0: want a whole number"},
		{append(base[:3:3], "--density", "2", "--ranks", "8"), "--density 2: want a fraction in (0, 1]"},
		{append(base[:5:5], "--ranks", "0"), "--ranks 0: want at least 1"},
		{append(base, "--degrees", "4x4"), "--degrees: 4x4 multiply to 16, not to the 8 nodes"},
		{append(base, "--compress", "zstd"), `--compress "zstd": want off, lz4 or auto`},
		{append(base, "--bytes-per-value", "0"), "--bytes-per-value 0: want at least 1"},
		{append(base, "--link", "fast"), `--link "fast": want ec2`},
		{append(base, "extra"), `unexpected argument "extra"`},
		{[]string{"bench", "--density", "0"}, "--density 0: want a fraction"},
	} {
		out, errs, code := tool(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("kylix %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	// One dash works as two does.
	out, errs, code := tool("plan", "-features", "1e6", "-density=0.1", "--ranks=8")
	if code != 0 || !strings.Contains(out, "ranks=8") {
		t.Errorf("one-dash flags: exit %d, %s%s", code, out, errs)
	}
}

// The tool's defaults are the library's: compress and min_packet as kylix_init has them.
func TestPlanDefaultsAreTheLibrarys(t *testing.T) {
	lib, err := kx.ParseOptions("rank=0;size=1", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := lookup("plan").newFlagSet()
	if got := fs.Lookup("compress").DefValue; got != lib.Compress {
		t.Errorf("--compress defaults to %s, the library to %s", got, lib.Compress)
	}
	if got, want := fs.Lookup("min-packet").DefValue, "1048576"; got != want || kx.DefaultMinPacket != 1048576 {
		t.Errorf("--min-packet defaults to %s, the library to %d", got, kx.DefaultMinPacket)
	}
	if fs.Lookup("value-bytes") != nil {
		t.Error("plan has --value-bytes beside --bytes-per-value")
	}
}
