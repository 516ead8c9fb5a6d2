package kx

import (
	"net"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options are the parsed kylix_init settings (the option table in include/kylix.h and the README).
type Options struct {
	Rank, Size  int
	Peers       []string // host:port per rank, or nil
	Rendezvous  string   // host:port, or ""
	Degrees     string   // "auto", "direct", "binary" or "8x4x2"
	Replication int
	Timeout     time.Duration // bound on waiting for a live peer that has not made its call
	Liveness    time.Duration // a peer silent (no frame, no heartbeat) this long is dead
	Secret      string
	Compress    string // off, lz4, auto
	MinPacket   int64  // bytes; 0: measured on the job's links (degrees=auto), else DefaultMinPacket
	Threads     int
	Log         string // off, error, warn, info, debug
	Shm         string // auto (ranks of one host use shared memory), off; "" counts as auto
	// Elastic: the comm accepts joiners at its next resize (kylix_resize); its join address is
	// the rendezvous. Join: host:port of a running elastic job that this process joins (rank
	// and size then come from the resize that admits it, not from the options).
	Elastic bool
	Join    string
	// Timeline: the directory where this rank writes its timeline (core/trace), or "".
	Timeline string
}

// DefaultTimeout bounds the wait for a live peer that is late to a collective (a long
// computation between two calls): ten minutes, as NCCL's default.
const DefaultTimeout = 10 * time.Minute

// DefaultLiveness is how long a peer may stay silent (no frame, no heartbeat) before it is
// declared dead: its process stopped, its host gone or its link cut.
const DefaultLiveness = 5 * time.Second

// DefaultMinPacket is used for degrees=auto when min_packet is not given and the links could
// not be measured.
const DefaultMinPacket = 1 << 20

var optionKeys = []string{"rank", "size", "peers", "rendezvous", "degrees", "replication",
	"timeout_ms", "liveness_ms", "secret", "compress", "min_packet", "threads", "log", "shm", "elastic", "join", "timeline"}

// ParseOptions reads "key=value;key=value" with every key also taken from the environment as
// KYLIX_<KEY>; the string wins. Rank and size also come from Open MPI, PMI and Slurm variables.
// getenv is os.Getenv in production and a map in tests.
func ParseOptions(s string, getenv func(string) string) (Options, error) {
	vals, err := optionValues(s, getenv)
	if err != nil {
		return Options{}, err
	}
	o := Options{Rank: -1, Size: -1, Degrees: "auto", Replication: 1, Timeout: DefaultTimeout,
		Liveness: DefaultLiveness, Compress: "auto", Threads: runtime.NumCPU(), Log: "warn", Shm: "auto",
		Rendezvous: vals["rendezvous"], Secret: vals["secret"], Join: vals["join"], Timeline: vals["timeline"]}
	steps := []func(*Options, map[string]string) error{parseNumbers, checkRankSize, parsePeers, parseWords, parseElastic}
	if o.Join != "" {
		// A joiner learns its rank, size and peers from the resize that admits it.
		steps = []func(*Options, map[string]string) error{parseNumbers, parseWords, parseElastic}
	}
	for _, step := range steps {
		if err := step(&o, vals); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

// optionValues gathers the raw values: the environment's KYLIX_<KEY>, overridden by the
// string's key=value pairs; rank and size also from Open MPI, PMI and Slurm.
func optionValues(s string, getenv func(string) string) (map[string]string, error) {
	vals := map[string]string{}
	for _, k := range optionKeys {
		if v := getenv("KYLIX_" + strings.ToUpper(k)); v != "" {
			vals[k] = v
		}
	}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok {
			return nil, Errorf(CodeArg, "options: %q is not key=value", part)
		}
		if !knownKey(k) {
			hint := ""
			if near := nearest(k, optionKeys); near != "" {
				hint = " (did you mean " + near + "?)"
			}
			return nil, Errorf(CodeArg, "options: unknown key %q%s (known: %s)", k, hint,
				strings.Join(optionKeys, ", "))
		}
		vals[k] = strings.TrimSpace(v)
	}
	for _, pair := range [][2]string{{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
		{"PMI_RANK", "PMI_SIZE"}, {"SLURM_PROCID", "SLURM_NTASKS"}} {
		if vals["rank"] == "" && getenv(pair[0]) != "" {
			vals["rank"] = getenv(pair[0])
		}
		if vals["size"] == "" && getenv(pair[1]) != "" {
			vals["size"] = getenv(pair[1])
		}
	}
	return vals, nil
}

// parseNumbers reads the integer options.
func parseNumbers(o *Options, vals map[string]string) error {
	var err error
	intOpt := func(key string, dst *int, min int) {
		if err != nil || vals[key] == "" {
			return
		}
		n, e := strconv.Atoi(vals[key])
		if e != nil || n < min {
			err = Errorf(CodeArg, "options: %s=%q must be an integer >= %d", key, vals[key], min)
			return
		}
		*dst = n
	}
	intOpt("rank", &o.Rank, 0)
	intOpt("size", &o.Size, 1)
	intOpt("replication", &o.Replication, 1)
	intOpt("threads", &o.Threads, 1)
	var ms, lms, mp int
	intOpt("timeout_ms", &ms, 1)
	intOpt("liveness_ms", &lms, 1)
	intOpt("min_packet", &mp, 1)
	if ms > 0 {
		o.Timeout = time.Duration(ms) * time.Millisecond
	}
	if lms > 0 {
		o.Liveness = time.Duration(lms) * time.Millisecond
	}
	if mp > 0 {
		o.MinPacket = int64(mp)
	}
	return err
}

// checkRankSize checks that this rank has a place in a job of a known size.
func checkRankSize(o *Options, _ map[string]string) error {
	switch {
	case o.Size < 0:
		return Errorf(CodeArg, "options: size is not set: run under kylixrun -n N, or set KYLIX_RANK/KYLIX_SIZE and peers or a rendezvous (or rank= and size= in the options)")
	case o.Rank < 0:
		return Errorf(CodeArg, "options: rank is not set (rank=, KYLIX_RANK, or a launcher's variables)")
	case o.Rank >= o.Size:
		return Errorf(CodeArg, "options: rank=%d must be below size=%d", o.Rank, o.Size)
	case o.Size%o.Replication != 0:
		return Errorf(CodeArg, "options: size=%d is not a multiple of replication=%d", o.Size, o.Replication)
	}
	return nil
}

// parsePeers reads the static peer table; without one, a job of several ranks needs a
// rendezvous.
func parsePeers(o *Options, vals map[string]string) error {
	if v := vals["peers"]; v != "" {
		o.Peers = strings.Split(v, ",")
		if len(o.Peers) != o.Size {
			return Errorf(CodeArg, "options: peers lists %d addresses for size=%d", len(o.Peers), o.Size)
		}
		for i, p := range o.Peers {
			o.Peers[i] = strings.TrimSpace(p)
			if !strings.Contains(o.Peers[i], ":") {
				return Errorf(CodeArg, "options: peers entry %d (%q) is not host:port", i, p)
			}
		}
	}
	if o.Size > 1 && o.Peers == nil && o.Rendezvous == "" {
		return Errorf(CodeArg, "options: size=%d needs peers= or rendezvous= (or run under kylixrun)", o.Size)
	}
	return nil
}

// parseWords reads the options whose values are words: degrees, compress, log, shm.
func parseWords(o *Options, vals map[string]string) error {
	if v := vals["degrees"]; v != "" && o.Join == "" { // a joiner takes the job's degrees
		if _, e := ParseDegreesSpec(v, o.Size/o.Replication); e != nil {
			return e
		}
		o.Degrees = v
	}
	for _, w := range []struct {
		key   string
		dst   *string
		words []string
	}{{"compress", &o.Compress, []string{"off", "lz4", "auto"}},
		{"log", &o.Log, []string{"off", "error", "warn", "info", "debug"}},
		{"shm", &o.Shm, []string{"auto", "off"}}} {
		v := vals[w.key]
		if v == "" {
			continue
		}
		if !slices.Contains(w.words, v) {
			return Errorf(CodeArg, "options: %s=%q must be %s or %s", w.key, v,
				strings.Join(w.words[:len(w.words)-1], ", "), w.words[len(w.words)-1])
		}
		*w.dst = v
	}
	return nil
}

// parseElastic reads elastic (0 or 1) and checks join=host:port. A joiner is elastic: the comm
// a resize admits it to accepts later joiners too.
func parseElastic(o *Options, vals map[string]string) error {
	switch vals["elastic"] {
	case "", "0":
	case "1":
		o.Elastic = true
	default:
		return Errorf(CodeArg, "options: elastic=%q must be 0 or 1", vals["elastic"])
	}
	if o.Join != "" {
		if _, port, err := net.SplitHostPort(o.Join); err != nil || port == "" || port == "0" {
			return Errorf(CodeArg, "options: join=%q is not host:port with a port other than 0", o.Join)
		}
		o.Elastic = true
	}
	return nil
}

func knownKey(k string) bool {
	i := sort.SearchStrings(sortedKeys, k)
	return i < len(sortedKeys) && sortedKeys[i] == k
}

var sortedKeys = func() []string {
	s := append([]string(nil), optionKeys...)
	sort.Strings(s)
	return s
}()
