#!/usr/bin/env bash
# run_ab_small.sh — a change's effect on the small steps, same run: the 248-key reduce and the
# 8-float allreduce of `kylix_sparse lat=N keys=256`, this build's and another checkout's
# (built with `make all`) alternating run by run, so that the VM's drifts and regimes (see
# docs/measurements.md, "two regimes") hit both alike. Prints, per build and op, the median over
# runs of each run's mean (and of its per-call median), then the runs' means in order. Not a
# test: `make test` does not run it.
#
#   tests/bench/run_ab_small.sh BEFORE_DIR [--runs=15] [--ranks=2] [--iters=100000]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
before=$(cd "$1" && pwd)
shift
runs=15 ranks=2 iters=100000
for a in "$@"; do
  case $a in
  --runs=*) runs=${a#*=} ;;
  --ranks=*) ranks=${a#*=} ;;
  --iters=*) iters=${a#*=} ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
  esac
done
[ -e build/libkylix.so ] || make
[ -e "$before/build/libkylix.so" ] || { echo "no $before/build/libkylix.so: run make all there" >&2; exit 2; }
for b in "$before" "$PWD"; do
  mkdir -p "$b/build/bench"
  gcc -O2 -march=native -std=c11 -I"$b/build/include" tests/bench/kylix_sparse.c \
    -L"$b/build" -lkylix -Wl,-rpath,"$b/build" -lm -o "$b/build/bench/kylix_sparse"
done
log=$(mktemp /tmp/ab-small.XXXXXX)
trap 'rm -f "$log"' EXIT
for ((i = 1; i <= runs; i++)); do
  for b in "$before" "$PWD"; do
    label=this
    [ "$b" = "$before" ] && label=before
    build/kylixrun -n "$ranks" -- "$b/build/bench/kylix_sparse" n=1e6 lat="$iters" keys=256 check=0 2>/dev/null |
      sed -n "s/^LAT /build=$label /p" >> "$log"
  done
done
echo "$runs runs a build, $ranks ranks, $iters calls a run (µs: median of the runs' means, (of their medians), the means in order)"
python3 - "$log" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    runs.setdefault((f["op"], f["build"]), []).append((float(f["mean_us"]), float(f["median_us"])))
for (op, build), v in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1] != "before")):
    print(f"{op:8} {build:7} {statistics.median(m for m, _ in v):.3f} ({statistics.median(d for _, d in v):.3f})  "
          + " ".join(f"{m:.2f}" for m, _ in v))
PY
