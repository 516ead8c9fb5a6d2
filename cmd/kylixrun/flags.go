package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"kylix/core/kx"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

const usageText = `usage: kylixrun -n N [options] [--] program [args...]
       kylixrun --join F -n K [--tag-output] [--timeout SEC] [--job-timeout SEC] [--] program [args...]

Starts N ranks of program, serves the rendezvous they use to find each other, and gives
every rank KYLIX_RANK, KYLIX_SIZE, KYLIX_RENDEZVOUS and a fresh KYLIX_SECRET (plus
KYLIX_DEGREES, KYLIX_REPLICATION, KYLIX_TIMEOUT_MS when given). The rest of the environment
is inherited. program is looked up in PATH: a C binary, python3 prog.py, java -cp ... alike.

When a rank exits non-zero or dies of a signal, the other ranks are stopped (SIGTERM to
each rank's process group, SIGKILL 2 s later) and kylixrun exits with that rank's code
(128+signal for a signal death). SIGINT, SIGTERM and SIGHUP are forwarded to every rank
(SIGINT and SIGTERM also when kylixrun was started with them ignored, as "kylixrun ... &" in a
script does). kylixrun returns once every rank is reaped and its process group is gone.

With --elastic a rank that dies is reported and the others go on: the program's survivors call
kylix_resize. --restarts relaunches it as a joiner ([j0], [j1], ... with --tag-output; the
joiners of kylixrun --join are [j<its pid>.0], ...). A tag keeps naming its process and says
its rank once a resize changed it: [0 was 1], [3 was j0], [2 was j4711.0]. A rank's clean exit starts the job's
end: from then on nobody is relaunched, a rank that fails gives the job its status, and a
joiner still not admitted 10 s later is stopped (and does not count). The job ends when its
ranks end.

options:
  -n N, -np N            number of ranks (default with --hosts/--hostfile: all their slots)
  --hosts h1:s1,h2:s2    hosts and slots (":s" defaults to 1); ranks fill the slots in order
  --hostfile F           one host per line: "host slots=N", "host:N" or "host"; # comments
  --degrees SPEC         auto, direct, binary or a list like 8x4x2 (KYLIX_DEGREES)
  --replication S        replicas per node; N must be a multiple of S (KYLIX_REPLICATION).
                         A rank that fails while its node has another live replica is
                         reported and the job goes on; it fails when a node loses them all
  --timeout SEC          per-wait timeout the ranks use (KYLIX_TIMEOUT_MS); not a job limit
  --job-timeout SEC      kill the whole job after SEC seconds and exit 124 (0: no limit)
  --timeline DIR         every rank (joiners too) writes its timeline to DIR (KYLIX_TIMELINE);
                         at the end, DIR/timeline.json and DIR/timeline.svg are made and
                         where the time went is printed (as "kylix timeline DIR" does)
  --tag-output           prefix every line of every rank's stdout and stderr with "[rank] ".
                         Without it, output to a file or pipe still passes a whole line at a
                         time (bytes unchanged), so kylixrun's own lines stay lines of their own
  --keep-going           do not stop the other ranks when one fails; exit with the first
                         failure's code once all are done
  --elastic              the job goes on when ranks die: the survivors call kylix_resize, and
                         processes may join (KYLIX_ELASTIC=1; the join address is the
                         rendezvous, which stays up for the whole job). Exits 0 when every
                         rank still in the job at its end exits 0
  --restarts R           with --elastic: relaunch a dead rank as a joiner (same host), up to R
                         relaunches in all (default 0)
  --job-file F           with --elastic: write {"join": "host:port", "secret": "..."} to F
                         (mode 0600) before any rank starts; removed when the job ends. Its
                         "tags" is where kylixrun --join follows the resizes for its tags
  --join F               add -n K ranks to the running elastic job whose --job-file is F: each
                         gets KYLIX_JOIN and KYLIX_SECRET (no KYLIX_RANK, KYLIX_SIZE,
                         KYLIX_RENDEZVOUS) and its kylix_init returns once the members'
                         next kylix_resize admitted it. A joiner that fails does not stop the
                         others; the exit status is the first failure's
  --ssh CMD              remote shell for hosts other than this one (default "ssh")
  --rendezvous-host H    address remote ranks use to reach this machine (default: the
                         local address that routes to the first remote host)
  --version              print kylixrun's version
  -h, --help             print this help

Ranks on localhost, 127.0.0.1, ::1 or this machine's hostname run locally; the others run
through "ssh -o BatchMode=yes host" in the same working directory with the same KYLIX_*
variables (the secret travels over ssh's stdin, never on a command line), and are stopped
when the launcher or their ssh goes away. At most 8 ssh logins per host are in progress at
once (sshd's default MaxStartups refuses more than 10). Rank 0 gets kylixrun's stdin, the others /dev/null.

exit status: 0 if all ranks exit 0 (--elastic: all ranks still in the job at its end); the failing rank's code; 124 on --job-timeout;
128+signal when kylixrun is interrupted; 127 if program is not found; 2 on bad usage.
`

// config is everything the command line says about a job.
type config struct {
	n           int // 0: not given
	hosts       []hostSlots
	degrees     string
	replication int // 0: not given
	timeout     time.Duration
	jobTimeout  time.Duration
	tagOutput   bool
	keepGoing   bool
	ssh         []string
	rvHost      string
	argv        []string

	elastic  bool   // --elastic
	restarts int    // --restarts: relaunches left to the whole job
	jobFile  string // --job-file
	join     string // --join: the job file of the elastic job to join
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errHelp asks for the usage text on stdout and exit status 0.
var errHelp = errors.New("help requested")

// errVersion asks for the version on stdout and exit status 0.
var errVersion = errors.New("version requested")

// secondsValue is a non-negative duration given in (possibly fractional) seconds.
type secondsValue struct {
	d   *time.Duration
	set bool
}

func (s *secondsValue) String() string {
	if s.d == nil {
		return "0"
	}
	return strconv.FormatFloat(s.d.Seconds(), 'g', -1, 64)
}

func (s *secondsValue) Set(v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e9 {
		return errors.New("must be a number of seconds >= 0")
	}
	*s.d = time.Duration(f * float64(time.Second))
	s.set = true
	return nil
}

// parseArgs reads the command line (without the program name). The flag package stops at the
// first non-flag argument or at "--", so the program's own flags are never touched.
func parseArgs(args []string) (*config, error) {
	c := &config{}
	fs, v := newFlagSet(c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, unknownFlag(fs, err)
	}
	if v.help {
		return nil, errHelp
	}
	if v.version {
		return nil, errVersion
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	c.argv = fs.Args()
	if len(c.argv) == 0 {
		return nil, usagef("no program given")
	}
	if err := checkElastic(c, set); err != nil {
		return nil, err
	}
	if set["hosts"] && set["hostfile"] {
		return nil, usagef("give --hosts or --hostfile, not both")
	}
	var err error
	switch {
	case set["hosts"]:
		c.hosts, err = parseHostList(v.hosts)
	case set["hostfile"]:
		c.hosts, err = readHostfile(v.hostfile)
	}
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	if set["n"] || set["np"] {
		if c.n < 1 {
			return nil, usagef("-n %d: need at least one rank", c.n)
		}
	} else if c.hosts != nil {
		c.n = totalSlots(c.hosts)
	} else {
		return nil, usagef("-n N is required (or --hosts/--hostfile to use all their slots)")
	}
	if c.hosts != nil && c.n > totalSlots(c.hosts) {
		return nil, usagef("-n %d exceeds the %d slots of the hosts given", c.n, totalSlots(c.hosts))
	}
	if set["replication"] {
		if c.replication < 1 {
			return nil, usagef("--replication %d must be >= 1", c.replication)
		}
		if c.n%c.replication != 0 {
			return nil, usagef("-n %d is not a multiple of --replication %d", c.n, c.replication)
		}
	}
	if set["degrees"] {
		c.degrees = strings.TrimSpace(c.degrees)
		s := c.replicas() // --replication, else KYLIX_REPLICATION
		if c.n%s != 0 {
			return nil, usagef("-n %d is not a multiple of the replication %d", c.n, s)
		}
		if _, err := kx.ParseDegreesSpec(c.degrees, c.n/s); err != nil {
			return nil, usagef("--degrees %q: %v", c.degrees, err)
		}
	}
	if v.timeout.set && c.timeout < time.Millisecond {
		return nil, usagef("--timeout must be at least 0.001 seconds")
	}
	c.ssh = strings.Fields(v.ssh)
	if len(c.ssh) == 0 {
		return nil, usagef("--ssh must name a command")
	}
	return c, nil
}

// flagVars are the flags that are not fields of config as they are.
type flagVars struct {
	hosts, hostfile, ssh string
	help, version        bool
	timeout              *secondsValue
}

// newFlagSet defines kylixrun's flags, writing into c and the returned flagVars.
func newFlagSet(c *config) (*flag.FlagSet, *flagVars) {
	v := &flagVars{timeout: &secondsValue{d: &c.timeout}}
	fs := flag.NewFlagSet("kylixrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.IntVar(&c.n, "n", 0, "")
	fs.IntVar(&c.n, "np", 0, "")
	fs.StringVar(&v.hosts, "hosts", "", "")
	fs.StringVar(&v.hostfile, "hostfile", "", "")
	fs.StringVar(&c.degrees, "degrees", "", "")
	fs.IntVar(&c.replication, "replication", 0, "")
	fs.Var(v.timeout, "timeout", "")
	fs.Var(&secondsValue{d: &c.jobTimeout}, "job-timeout", "")
	fs.BoolVar(&c.tagOutput, "tag-output", false, "")
	fs.BoolVar(&c.keepGoing, "keep-going", false, "")
	fs.StringVar(&v.ssh, "ssh", "ssh", "")
	fs.StringVar(&c.rvHost, "rendezvous-host", "", "")
	fs.BoolVar(&c.elastic, "elastic", false, "")
	fs.IntVar(&c.restarts, "restarts", 0, "")
	fs.StringVar(&c.jobFile, "job-file", "", "")
	fs.StringVar(&c.join, "join", "", "")
	timelineFlag(fs) // timeline.go
	fs.BoolVar(&v.help, "h", false, "")
	fs.BoolVar(&v.help, "help", false, "")
	fs.BoolVar(&v.version, "version", false, "")
	return fs, v
}

// joinCompatible are the flags that mean something to kylixrun --join: it starts local joiners
// of a job whose layout the members already agreed on.
var joinCompatible = map[string]bool{"join": true, "n": true, "np": true, "tag-output": true,
	"timeout": true, "job-timeout": true, "timeline": true}

// checkElastic checks the flags of elastic jobs and of --join against the others.
func checkElastic(c *config, set map[string]bool) error {
	if set["join"] {
		if c.join == "" {
			return usagef("--join needs the job file of a running kylixrun --elastic --job-file F")
		}
		for _, name := range sortedKeys(set) {
			if !joinCompatible[name] {
				return usagef("--%s does not go with --join (a joiner takes the running job's settings)", name)
			}
		}
		if !set["n"] && !set["np"] {
			return usagef("--join F needs -n K, the number of ranks to add")
		}
		return nil
	}
	for _, name := range []string{"restarts", "job-file"} {
		if set[name] && !c.elastic {
			return usagef("--%s needs --elastic", name)
		}
	}
	if c.elastic && c.keepGoing {
		return usagef("--keep-going does not go with --elastic (an elastic job goes on by itself)")
	}
	if c.restarts < 0 {
		return usagef("--restarts %d must be >= 0", c.restarts)
	}
	if set["job-file"] && c.jobFile == "" {
		return usagef("--job-file needs a file name")
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// printUsageError writes the one-line complaint and a pointer to --help.
func printUsageError(w io.Writer, err error) {
	fmt.Fprintf(w, "kylixrun: %v\nRun 'kylixrun --help' for usage.\n", err)
}
