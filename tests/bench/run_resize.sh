#!/usr/bin/env bash
# run_resize.sh — what a change of membership costs, and seed 004's ramp-up curve. Not a test:
# `make test` does not run it. Results: tests/bench/results-elastic.md, rampup-loss.svg.
#
#   tests/bench/run_resize.sh [--reps=20] [--ranks="2 4 8 16"] [--iters=60] [--out=FILE]
#
# 1. kylix_resize.c at each number of ranks, one kylixrun --elastic job per case group:
#    "base": resize(0) of a healthy comm, kylix_shrink, and a fresh kylix_init of the same
#    ranks (static peers table); "join": a resize that admits 2 joiners waiting at the join port
#    (a second kylixrun --join starts them). Each cell: the median over --reps of the slowest
#    rank's time, after a warm-up.
# 2. examples/c/elastic_logreg in ramp-up mode (2 ranks, +2 at iteration iters/6 and +2 at
#    iters/3, each through kylixrun --join) and as a normal 6-rank run, on the same data; the
#    membership logs are checked (--check) and drawn (elastic_report.py svg).
# BUILD=dir uses a library built elsewhere (default build/, made when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=20 ranks="2 4 8 16" iters=60 outfile=
for a in "$@"; do
  case $a in
  --reps=*) reps=${a#*=} ;;
  --ranks=*) ranks=${a#*=} ;;
  --iters=*) iters=${a#*=} ;;
  --out=*) outfile=${a#*=} ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
done
build=${BUILD:-build}
[ -e "$build/libkylix.so" ] || make -s all
mkdir -p "$build/bench"
lib=$(cd "$build" && pwd)
for p in tests/bench/kylix_resize examples/c/elastic_logreg; do
  gcc -O2 -std=c11 -Wall -Wextra -I"$build/include" "$p.c" -L"$build" -lkylix -Wl,-rpath,"$lib" -lm \
    -o "$build/bench/$(basename "$p")"
done
run=$build/kylixrun prog=$build/bench/kylix_resize logreg=$build/bench/elastic_logreg
work=$(mktemp -d /tmp/run_resize.XXXXXX)
trap 'rm -rf "$work"' EXIT

# waitfile F: until F exists (30 s at most)
waitfile() { for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.05; done; echo "no $1" >&2; return 1; }

for n in $ranks; do
  echo "== $n ranks (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$run" -n "$n" --elastic --timeout 120 --job-timeout 900 -- "$prog" base "$reps" | tee -a "$work/lines" >&2
  rm -f "$work/job.json"
  "$run" -n "$n" --elastic --job-file "$work/job.json" --timeout 120 --job-timeout 900 -- \
    "$prog" join "$reps" 2 >"$work/join.out" &
  waitfile "$work/job.json"
  "$run" --join "$work/job.json" -n 2 --timeout 120 --job-timeout 900 -- "$prog" join "$reps" 2
  wait $!
  grep '^case=' "$work/join.out" | tee -a "$work/lines" >&2
done

echo "== ramp-up and normal elastic_logreg, $iters iterations" >&2
a=$((iters / 6)) b=$((iters / 3))
lr=(--iters "$iters" --resize-every 0 --sleep-ms 20)
"$run" -n 2 --elastic --job-file "$work/ramp.json" --timeout 120 -- "$logreg" "${lr[@]}" \
  --ramp "$a:4,$b:6" --log "$work/ramp.log" >&2 &
job=$!
waitfile "$work/ramp.json"
"$run" --join "$work/ramp.json" -n 2 --timeout 120 -- "$logreg" "${lr[@]}" --ramp "$a:4,$b:6" &
j1=$!
until grep -q "^M $a 4 " "$work/ramp.log" 2>/dev/null; do sleep 0.05; done
"$run" --join "$work/ramp.json" -n 2 --timeout 120 -- "$logreg" "${lr[@]}" --ramp "$a:4,$b:6"
wait "$j1" "$job"
"$run" -n 6 -- "$logreg" "${lr[@]}" --log "$work/normal.log" >&2
"$logreg" --check "$work/ramp.log" >&2
"$logreg" --check "$work/normal.log" >&2
python3 tests/bench/elastic_report.py svg "$work/ramp.log" "$work/normal.log" >tests/bench/rampup-loss.svg

{
  echo "kylix_resize.c, $reps reps after a warm-up, median (min–max) ms of the slowest rank; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo
  python3 tests/bench/elastic_report.py table "$work/lines"
  echo
  echo "ramp-up log:"
  grep '^M' "$work/ramp.log"
  echo "last iteration, ramp-up: $(grep '^I' "$work/ramp.log" | tail -1 | cut -d' ' -f2-5)"
  echo "last iteration, normal:  $(grep '^I' "$work/normal.log" | tail -1 | cut -d' ' -f2-5)"
} | if [ -n "$outfile" ]; then tee "$outfile"; else cat; fi
