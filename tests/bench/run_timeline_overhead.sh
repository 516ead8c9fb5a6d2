#!/usr/bin/env bash
# run_timeline_overhead.sh — what the timeline (option timeline, KYLIX_TIMELINE) costs: the
# small-step latency benchmark (kylix_sparse lat=N: N back-to-back reduces of a kept plan,
# 248 keys a rank, and N 8-float allreduces) and a large reduce (kylix_sparse: n = 10^7,
# density 0.2, about 2M keys a rank; the median of its 10 timed reduces), each run with the
# timeline off and on, alternating, in one run, so the ratios do not depend on the machine's
# mood. Prints each run's figures and, per figure, the median over reps off and on and the
# ratio on/off. With --before=DIR (another checkout, built with `make all`), that build's runs
# alternate with this one's (before off, before on, this off, this on, ...) and both are
# summarized: a change's effect measured in the same run. Not a test: `make test` does not run it.
# The latency runs are long enough (20000 calls of each kind) for the timeline's writer to run
# many times inside them: 2000 calls filled less than half a buffer, so its cost fell outside.
#
#   tests/bench/run_timeline_overhead.sh [--ranks=2] [--reps=5] [--iters=20000] [--n=1e7]
#                                        [--density=0.2] [--only=lat|large] [--before=DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=2 reps=5 iters=20000 n=1e7 density=0.2 only= before=
for a in "$@"; do
  case $a in
  --ranks=*) ranks=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  --iters=*) iters=${a#*=} ;;
  --n=*) n=${a#*=} ;;
  --density=*) density=${a#*=} ;;
  --only=*) only=${a#*=} ;;
  --before=*) before=$(cd "${a#*=}" && pwd) ;;
  *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
[ -e build/libkylix.so ] || make
builds=("$PWD")
labels=(this)
if [ -n "$before" ]; then
  [ -e "$before/build/libkylix.so" ] || { echo "no $before/build/libkylix.so: run make all there" >&2; exit 2; }
  builds=("$before" "$PWD")
  labels=(before this)
fi
for b in "${builds[@]}"; do
  mkdir -p "$b/build/bench"
  gcc -O2 -march=native -std=c11 -Wall -Wextra -I"$b/build/include" tests/bench/kylix_sparse.c \
    -L"$b/build" -lkylix -Wl,-rpath,"$b/build" -lm -o "$b/build/bench/kylix_sparse"
done
tl=$(mktemp -d /tmp/timeline-overhead.XXXXXX)
log=$(mktemp /tmp/timeline-overhead-log.XXXXXX)
trap 'rm -rf "$tl" "$log"' EXIT
run() { # build label mode what args...
  local b=$1 label=$2 mode=$3 what=$4
  shift 4
  rm -rf "${tl:?}"/*
  if [ "$mode" = on ]; then
    KYLIX_TIMELINE=$tl "$b/build/kylixrun" -n "$ranks" -- "$b/build/bench/kylix_sparse" "$@" check=0 2>/dev/null
  else
    "$b/build/kylixrun" -n "$ranks" -- "$b/build/bench/kylix_sparse" "$@" check=0 2>/dev/null
  fi | sed -n "s/^\(LAT\|RESULT\) /$what build=$label mode=$mode /p" | tee -a "$log"
}
for ((rep = 1; rep <= reps; rep++)); do
  for i in "${!builds[@]}"; do
    for mode in off on; do # alternate, so drifting load hits both alike
      [ "$only" = large ] || run "${builds[$i]}" "${labels[$i]}" "$mode" lat n=1e6 lat="$iters" keys=248
      [ "$only" = lat ] || run "${builds[$i]}" "${labels[$i]}" "$mode" large n="$n" density="$density"
    done
  done
done
echo
echo "median over $reps reps, timeline off / on, ratio on/off ($ranks ranks, $(nproc) cores, 1-min load $(cut -d' ' -f1 /proc/loadavg))"
awk '
  function put(k, v) { n[k]++; val[k, n[k]] = v }
  function med(k,   i, j, t, c) {
    c = n[k]
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (val[k, j] < val[k, i]) { t = val[k, i]; val[k, i] = val[k, j]; val[k, j] = t }
    return c % 2 ? val[k, (c + 1) / 2] : (val[k, c / 2] + val[k, c / 2 + 1]) / 2
  }
  {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    b = f["build"] " "
    if ($1 == "lat") {
      put(b "latency " f["op"] " median_us|" f["mode"], f["median_us"]); put(b "latency " f["op"] " mean_us|" f["mode"], f["mean_us"])
    } else {
      put(b "large reduce_ms|" f["mode"], f["reduce_ms"])
    }
    delete f
  }
  END {
    for (k in n) { split(k, p, "|"); if (p[2] == "off") names[p[1]] = 1 }
    for (m in names) {
      a = med(m "|off"); b = med(m "|on")
      printf "%-34s %10.2f %10.2f   %.3f\n", m, a, b, (a > 0 ? b / a : 0)
    }
  }' "$log" | sort
