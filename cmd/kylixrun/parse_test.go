package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseHostList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []hostSlots
		err  string
	}{
		{in: "a:2,b:3", want: []hostSlots{{"a", 2}, {"b", 3}}},
		{in: " a , b:1 ,", want: []hostSlots{{"a", 1}, {"b", 1}}},
		{in: "[::1]:4,[fe80::1]", want: []hostSlots{{"::1", 4}, {"fe80::1", 1}}},
		{in: "fe80::2", want: []hostSlots{{"fe80::2", 1}}},
		{in: "node-1.example.com:16", want: []hostSlots{{"node-1.example.com", 16}}},
		{in: "a:0", err: "slots must be"},
		{in: "a:x", err: "slots must be"},
		{in: ":3", err: "empty host"},
		{in: "[::1", err: "missing ']'"},
		{in: ",", err: "no hosts"},
	} {
		got, err := parseHostList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseHostList(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseHostList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseHostfile(t *testing.T) {
	text := `# cluster A
node1 slots=4
node2:2   # trailing comment
   node3

[::1]:3
node4 slots=2 max_slots=8
`
	got, err := parseHostfile("hf", text)
	want := []hostSlots{{"node1", 4}, {"node2", 2}, {"node3", 1}, {"::1", 3}, {"node4", 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseHostfile = %v, %v; want %v", got, err, want)
	}
	for _, tc := range []struct{ text, err string }{
		{"a slots=0\n", "hf:1:"},
		{"a\nb cpus=3\n", "hf:2: unexpected \"cpus=3\""},
		{"a:2 slots=3\n", "slots given twice"},
		{"a slots=\n", "slots= needs a value"},
		{"# nothing\n\n", "no hosts"},
	} {
		if _, err := parseHostfile("hf", tc.text); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseHostfile(%q) error = %v; want it to contain %q", tc.text, err, tc.err)
		}
	}
}

func TestPlaceRanks(t *testing.T) {
	hs := []hostSlots{{"a", 2}, {"b", 1}, {"c", 3}}
	if got, want := placeRanks(hs, 4), []string{"a", "a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("placeRanks(4) = %v, want %v", got, want)
	}
	if got, want := placeRanks(hs, 6), []string{"a", "a", "b", "c", "c", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("placeRanks(6) = %v, want %v", got, want)
	}
	if got := placeRanks(nil, 3); !reflect.DeepEqual(got, []string{"", "", ""}) {
		t.Errorf("placeRanks(nil, 3) = %q", got)
	}
}

func TestIsLocalHost(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST", "127.0.0.1", "::1"} {
		if !isLocalHost(h) {
			t.Errorf("isLocalHost(%q) = false", h)
		}
	}
	if name, err := os.Hostname(); err == nil && !isLocalHost(name) {
		t.Errorf("isLocalHost(own hostname %q) = false", name)
	}
	if isLocalHost("surely-not-this-machine.invalid") {
		t.Error("isLocalHost(other) = true")
	}
}

func TestParseArgs(t *testing.T) {
	c, err := parseArgs(strings.Fields("-n 4 --degrees 2x2 --timeout 1.5 --job-timeout 3 --tag-output --keep-going -- prog -n 7 --tag-output"))
	if err != nil {
		t.Fatal(err)
	}
	if c.n != 4 || c.degrees != "2x2" || c.timeout != 1500*time.Millisecond || c.jobTimeout != 3*time.Second ||
		!c.tagOutput || !c.keepGoing || !reflect.DeepEqual(c.argv, []string{"prog", "-n", "7", "--tag-output"}) {
		t.Errorf("parseArgs = %+v", c)
	}
	// Without "--", flags stop at the program name.
	c, err = parseArgs([]string{"-n=2", "python3", "-u", "prog.py"})
	if err != nil || c.n != 2 || !reflect.DeepEqual(c.argv, []string{"python3", "-u", "prog.py"}) {
		t.Errorf("parseArgs = %+v, %v", c, err)
	}
	// -n defaults to every slot of the hosts.
	c, err = parseArgs([]string{"--hosts", "localhost:3,b:2", "prog"})
	if err != nil || c.n != 5 || len(c.hosts) != 2 {
		t.Errorf("parseArgs(--hosts) = %+v, %v", c, err)
	}
	hf := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hf, []byte("localhost slots=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = parseArgs([]string{"--hostfile", hf, "-n", "2", "prog"})
	if err != nil || c.n != 2 || !reflect.DeepEqual(c.hosts, []hostSlots{{"localhost", 2}}) {
		t.Errorf("parseArgs(--hostfile) = %+v, %v", c, err)
	}

	for _, tc := range []struct {
		args string
		err  string
	}{
		{"prog", "-n N is required"},
		{"-n 0 prog", "at least one rank"},
		{"-n 2", "no program"},
		{"-n 2 --bogus prog", "unknown option --bogus"},
		{"-n x prog", "invalid value"},
		{"-n 3 --hosts a:2 prog", "exceeds the 2 slots"},
		{"-n 2 --hosts a --hostfile f prog", "not both"},
		{"-n 3 --replication 2 prog", "not a multiple"},
		{"-n 4 --replication 0 prog", "must be >= 1"},
		{"-n 4 --degrees 3x2 prog", "--degrees"},
		{"-n 8 --replication 2 --degrees 8 prog", "--degrees"},
		{"-n 4 --degrees fast prog", "--degrees"},
		{"-n 2 --timeout -1 prog", "seconds"},
		{"-n 2 --timeout 0 prog", "at least"},
		{"-n 2 --job-timeout abc prog", "seconds"},
		{"-n 2 --hostfile /nonexistent/hf prog", "--hostfile"},
	} {
		_, err := parseArgs(strings.Fields(tc.args))
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseArgs(%q) error = %v; want a usage error containing %q", tc.args, err, tc.err)
		}
	}
	for _, h := range []string{"-h", "--help", "-help"} {
		if _, err := parseArgs([]string{h}); !errors.Is(err, errHelp) {
			t.Errorf("parseArgs(%s) = %v, want errHelp", h, err)
		}
	}
}

func TestRankEnv(t *testing.T) {
	base := []string{"PATH=/bin", "KYLIX_PEERS=a:1,b:2", "KYLIX_RANK=9", "KYLIX_LOG=debug", "KYLIX_DEGREES=4", "HOME=/h"}
	c := &config{n: 2, degrees: "2", timeout: 1500 * time.Millisecond}
	got := rankEnv(base, jobVars(c, 1, "127.0.0.1:5", "s3cret"))
	want := []string{"PATH=/bin", "KYLIX_LOG=debug", "HOME=/h",
		"KYLIX_RANK=1", "KYLIX_SIZE=2", "KYLIX_RENDEZVOUS=127.0.0.1:5", "KYLIX_SECRET=s3cret",
		"KYLIX_LAUNCHER=kylixrun", "KYLIX_DEGREES=2", "KYLIX_TIMEOUT_MS=1500"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rankEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestLocalThreads(t *testing.T) {
	cores := runtime.NumCPU()
	local := []string{"", "", "", ""}
	if got, want := localThreads(local, 0, ""), strconv.Itoa(max(1, cores/4)); got != want {
		t.Errorf("4 local ranks: %q, want %q", got, want)
	}
	if got := localThreads(local, 1, "3"); got != "" {
		t.Errorf("user's KYLIX_THREADS=3 overridden with %q", got)
	}
	mixed := []string{"", "nodeB", "", "nodeB"}
	if got, want := localThreads(mixed, 0, ""), strconv.Itoa(max(1, cores/2)); got != want {
		t.Errorf("2 local of 4: %q, want %q", got, want)
	}
	if got := localThreads(mixed, 1, ""); got != "" {
		t.Errorf("remote rank got %q", got)
	}
}

func TestParseElastic(t *testing.T) {
	c, err := parseArgs(strings.Fields("-n 2 --elastic --restarts 3 --job-file /tmp/j.json prog"))
	if err != nil || !c.elastic || c.restarts != 3 || c.jobFile != "/tmp/j.json" {
		t.Errorf("parseArgs(--elastic) = %+v, %v", c, err)
	}
	c, err = parseArgs(strings.Fields("--join /tmp/j.json -n 2 --tag-output --timeout 5 -- prog --elastic"))
	if err != nil || c.join != "/tmp/j.json" || c.n != 2 || !c.tagOutput || c.elastic ||
		!reflect.DeepEqual(c.argv, []string{"prog", "--elastic"}) {
		t.Errorf("parseArgs(--join) = %+v, %v", c, err)
	}
	for _, tc := range []struct {
		args string
		err  string
	}{
		{"-n 2 --restarts 1 prog", "--restarts needs --elastic"},
		{"-n 2 --job-file f prog", "--job-file needs --elastic"},
		{"-n 2 --elastic --restarts -1 prog", "--restarts -1 must be >= 0"},
		{"-n 2 --elastic --keep-going prog", "--keep-going does not go with --elastic"},
		{"-n 2 --elastic --job-file= prog", "--job-file needs a file name"},
		{"--join f prog", "--join F needs -n K"},
		{"--join= -n 2 prog", "--join needs the job file"},
		{"--join f -n 2 --elastic prog", "--elastic does not go with --join"},
		{"--join f -n 2 --restarts 1 prog", "--restarts does not go with --join"},
		{"--join f -n 2 --job-file g prog", "--job-file does not go with --join"},
		{"--join f -n 2 --hosts a:2 prog", "--hosts does not go with --join"},
		{"--join f -n 2 --degrees 2 prog", "--degrees does not go with --join"},
		{"--join f -n 2 --replication 2 prog", "--replication does not go with --join"},
		{"--join f -n 2 --keep-going prog", "--keep-going does not go with --join"},
		{"--join f -n 0 prog", "at least one rank"},
		{"--elastc -n 2 prog", "did you mean --elastic"},
	} {
		_, err := parseArgs(strings.Fields(tc.args))
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseArgs(%q) error = %v; want a usage error containing %q", tc.args, err, tc.err)
		}
	}
}

func TestJoinerVars(t *testing.T) {
	c := &config{n: 2, elastic: true, timeout: 2 * time.Second}
	base := []string{"PATH=/bin", "KYLIX_RANK=1", "KYLIX_SIZE=4", "KYLIX_RENDEZVOUS=h:1", "KYLIX_JOIN=old:1",
		"KYLIX_ELASTIC=0", "KYLIX_SECRET=old"}
	got := rankEnv(base, joinerVars(c, "127.0.0.1:9", "s3cret"))
	want := []string{"PATH=/bin", "KYLIX_JOIN=127.0.0.1:9", "KYLIX_SECRET=s3cret", "KYLIX_ELASTIC=1", "KYLIX_LAUNCHER=kylixrun",
		"KYLIX_TIMEOUT_MS=2000"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("joiner env = %q, want %q", got, want)
	}
	got = rankEnv(base, jobVars(c, 0, "127.0.0.1:9", "s"))
	if !slices.Contains(got, "KYLIX_ELASTIC=1") || slices.Contains(got, "KYLIX_JOIN=old:1") {
		t.Errorf("member env of an elastic job = %q", got)
	}
	c.elastic = false
	if got = rankEnv(base, jobVars(c, 0, "127.0.0.1:9", "s")); slices.ContainsFunc(got, func(kv string) bool {
		return strings.HasPrefix(kv, "KYLIX_ELASTIC=") || strings.HasPrefix(kv, "KYLIX_JOIN=")
	}) {
		t.Errorf("a fixed job's rank inherits KYLIX_ELASTIC or KYLIX_JOIN: %q", got)
	}
}
