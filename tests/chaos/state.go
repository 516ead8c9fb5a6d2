package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// record is one workload process's state record (workload.c: save_state), the line it
// rewrites in place after every phase and step.
type record struct {
	Pid, Ppid int
	Phase     string
	Rank      int
	Size      int
	Step      int64
	Counts    map[string]int64 // sparse, plan, dense, rsum, bcast, members, wrong, late, bad, ...
	start     uint64           // the process's start time (/proc/<pid>/stat), 0 when gone
}

// checkKinds are the checked collectives, in the table's order, with their names there.
var checkKinds = []struct{ key, name string }{
	{"sparse", "sparse config_reduce (I64 SUM, width 2)"},
	{"plan", "reduce on a kept plan (F64 SUM)"},
	{"dense", "dense allreduce (I64 SUM)"},
	{"rsum", "dense allreduce (F64 RSUM, bitwise)"},
	{"bcast", "bcast (1 B to 70 kB; to 600 kB on one host)"},
	{"members", "membership agreement after a resize"},
}

func parseRecord(b []byte) (record, bool) {
	r := record{Counts: map[string]int64{}}
	for _, f := range strings.Fields(string(b)) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "phase":
			r.Phase = v
		default:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "pid":
				r.Pid = int(n)
			case "ppid":
				r.Ppid = int(n)
			case "rank":
				r.Rank = int(n)
			case "size":
				r.Size = int(n)
			case "step":
				r.Step = n
			default:
				r.Counts[k] = n
			}
		}
	}
	return r, r.Pid > 0 && r.Phase != ""
}

// readRecords reads every state record in dir, by pid.
func readRecords(dir string) map[int]record {
	out := map[int]record{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "p") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if r, ok := parseRecord(b); ok {
			out[r.Pid] = r
		}
	}
	return out
}

// procStart is a process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat),
// or 0 when there is no such process: with the pid it names one process, even after pid reuse.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// alive tells whether the process is running or stopped (not a zombie, not gone).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// withToken lists the processes whose command line holds token (the job's mark in argv).
func withToken(token string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), token) {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// members are the live processes that are members of the job now (phase member or resize), in
// rank order; joining are those waiting to be admitted.
func members(recs map[int]record, phases ...string) []record {
	var out []record
	for _, r := range recs {
		for _, p := range phases {
			if r.Phase == p && alive(r.Pid) {
				out = append(out, r)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Rank < out[j].Rank || (out[i].Rank == out[j].Rank && out[i].Pid < out[j].Pid)
	})
	return out
}

// ConnectedTo tells whether process pid holds an established TCP connection to port, from its
// descriptors and the socket table of its network namespace.
func ConnectedTo(pid, port int) bool {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	want := fmt.Sprintf(":%04X", port)
	for _, table := range []string{"tcp", "tcp6"} {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		for _, ln := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(ln)
			if len(f) > 9 && strings.HasSuffix(f[2], want) && f[3] == "01" && inodes[f[9]] {
				return true
			}
		}
	}
	return false
}

// shmEntries lists /dev/shm.
func shmEntries() map[string]bool {
	out := map[string]bool{}
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// fdDiff reads a process's descriptor lists (workload.c: save_fd_lists, warm then at its end)
// and says by kind what it held at its end and not warm, and the other way round:
// "; more than warm: [1 x pidfd of a live process]; fewer: []". Descriptor numbers, inodes and
// addresses are left out, so that a connection or pipe made again counts as the same kind.
func fdDiff(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	warm, done, _ := strings.Cut(strings.TrimPrefix(string(b), "warm:\n"), "done:\n")
	kinds := func(list string) map[string]int {
		out := map[string]int{}
		for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			k := strings.Join(f[1:], " ")
			switch {
			case strings.HasPrefix(f[1], "socket:[") && len(f) >= 7 && strings.HasPrefix(f[2], "tcp"):
				k = "socket " + f[2] + " state " + f[6] // addresses differ from one connection to the next
			case strings.HasPrefix(f[1], "socket:["):
				k = "socket " + strings.Join(f[2:], " ")
			case f[1] == "anon_inode:[pidfd]" && len(f) > 3 && f[3] == "-1":
				k = "pidfd of an exited process"
			case f[1] == "anon_inode:[pidfd]":
				k = "pidfd of a live process"
			case strings.HasPrefix(f[1], "pipe:["):
				k = "pipe"
			case f[1] == "anon_inode:[eventfd]":
				k = "eventfd"
			case f[0] == "maps":
				k = "mapping of a memfd:kylix-shm"
				out[k] += int(parseInt(f[1])) - 1 // counted as many times, not as one line
			}
			out[k]++
		}
		return out
	}
	w, d := kinds(warm), kinds(done)
	var more, fewer []string
	for k, n := range d {
		if n > w[k] {
			more = append(more, fmt.Sprintf("%d x %s", n-w[k], k))
		}
	}
	for k, n := range w {
		if n > d[k] {
			fewer = append(fewer, fmt.Sprintf("%d x %s", n-d[k], k))
		}
	}
	sort.Strings(more)
	sort.Strings(fewer)
	return fmt.Sprintf("; more than warm: [%s]; fewer: [%s]", strings.Join(more, ", "), strings.Join(fewer, ", "))
}

func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
