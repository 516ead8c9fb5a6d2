#!/usr/bin/env bash
# run_replication.sh — the cost of replication and the gain of packet racing, against Table I of
# "Kylix: A Sparse Allreduce for Commodity Clusters" (§V, §VII-C), in one run, on one host.
# Not a test: `make test` does not run it. Results: tests/bench/results-replication.md.
#
#   tests/bench/run_replication.sh [--quick] [--n=1e7] [--densities="0.1"] [--reps=3]
#       [--stop-ms=20] [--period-ms=100] [--link-rate=1gbit] [--no-link] [--out=FILE]
#
# Cases (jobs of tests/bench/replication.c on the same power-law node data, f32 SUM):
#   s1-4      4 ranks, no replication: the 4 nodes of data           (Table I's 32-node column)
#   s1-8      8 ranks, no replication: the data in 8 parts           (Table I's 64-node column)
#   s2-deadK  8 ranks, --replication 2 (4 nodes x 2); K = 0..3 replicas of different nodes
#             (ranks 1, 6, 3) SIGKILL themselves after the warm-up, before timing
#   s1-stop, s2-stop   s1-4 and s2-dead0 with rank 1 stopped (SIGSTOP) for stop-ms of every
#             period-ms by a child process
#   s1-stall, s2-stall the same with longer stops: 500 ms of every 1000 ms
#   link-s1, link-s2, link-s1-slow, link-s2-slow   the same two jobs with rank 1 in a network
#             namespace behind a veth pair (slowlink.sh), unshaped, then behind a token bucket
#             of link-rate each way; needs root, ip and tc (skipped otherwise, or --no-link)
# All cases run interleaved, rep after rep, so that the machine's moods spread over them.
# Timing: replication.c; tables: replication_table.py. The first rep checks every job's
# results against a brute force over the node data. --quick: n=1e6, 1 rep (~40 s); the default
# takes ~4 minutes on 2 cores.
# BUILD=dir uses a library built elsewhere (default build/, made when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${BENCH_N:-1e7}
densities=${BENCH_DENSITIES:-0.1}
reps=${BENCH_REPS:-3}
stop_ms=20 period_ms=100 stall_ms=500 stall_period_ms=1000 link_rate=1gbit link=1 outfile=
for a in "$@"; do
  case $a in
  --quick) n=1e6 densities=0.1 reps=1 ;;
  --n=*) n=${a#*=} ;;
  --densities=*) densities=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  --stop-ms=*) stop_ms=${a#*=} ;;
  --period-ms=*) period_ms=${a#*=} ;;
  --link-rate=*) link_rate=${a#*=} ;;
  --no-link) link=0 ;;
  --out=*) outfile=${a#*=} ;;
  *) sed -n '2,24p' "$0" >&2; exit 2 ;;
  esac
done
build=${BUILD:-build}
[ -e "$build/libkylix.so" ] || make -s all
bin=$build/bench
mkdir -p "$bin"
gcc -O2 -march=native -std=c11 -Wall -Wextra -Wno-unused-function -I"$build/include" \
  tests/bench/replication.c -L"$build" -lkylix -Wl,-rpath,"$(cd "$build" && pwd)" -lm \
  -o "$bin/replication"
prog=$(cd "$bin" && pwd)/replication
slowlink=tests/bench/slowlink.sh

work=$(mktemp -d /tmp/run_replication.XXXXXX)
ns=kyrep$$ veth=kyr$$
cleanup() {
  [ "$link" = 1 ] && bash "$slowlink" down "$ns" "$veth"
  rm -rf "$work"
}
trap cleanup EXIT
if [ "$link" = 1 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v tc >/dev/null || ! bash "$slowlink" up "$ns" "$veth"; then
    echo "run_replication: no network namespace (needs root, ip, tc): skipping the slow link" >&2
    link=0
  fi
fi
log=$work/log
load() { cut -d' ' -f1-3 /proc/loadavg; }
start=$(date +%s)
echo "PARAM reps=$reps stop_ms=$stop_ms period_ms=$period_ms stall_ms=$stall_ms" \
  "stall_period_ms=$stall_period_ms link_rate=$link_rate" >>"$log"
echo "LOAD start $(load)" >>"$log"

# job CASE DENSITY REP CHECK LAUNCH... -- ARGS...: one job (LAUNCH runs the program, ARGS are
# the program's own), its timestamp files tagged into the log.
job() {
  local name=$1 d=$2 rep=$3 check=$4
  shift 4
  local end="$work/end.$name.$d.$rep" launch=()
  mkdir -p "$end"
  while [ "$1" != -- ]; do launch+=("$1"); shift; done
  shift
  echo "rep $rep/$reps: $name density=$d" >&2
  if ! "${launch[@]}" "$prog" n="$n" density="$d" check="$check" stop_ms="$stop_ms" \
    period_ms="$period_ms" enddir="$end" "$@" >"$work/out" 2>&1; then
    echo "run_replication: $name density=$d rep $rep failed" >&2
  fi
  grep -v 'the job goes on$' "$work/out" | sed 's/^/  | /' >&2 || true
  cat "$end"/times.* 2>/dev/null |
    sed -n "s/^\(TS\|CHECK\) /& case=$name density=$d rep=$rep /p" >>"$log"
}

kr=("$build/kylixrun" --job-timeout 300)
for ((rep = 1; rep <= reps; rep++)); do
  check=$((rep == 1 ? 1 : 0))
  for d in $densities; do
    # A stall costs now and then, so the jobs racing compares loop for a second or more (a
    # config takes ~2.2 s x density x n/1e7 and a reduce ~0.3 s x density x n/1e7 here).
    long=$(awk -v d="$d" -v n="$n" 'BEGIN { f = 1e7 / n
      c = int(0.5 / d * f + 0.999); r = int(2.5 / d * f + 0.999)
      printf "configs=%d reduces=%d", (c < 6 ? 6 : c), (r < 12 ? 12 : r) }')
    job s1-4 "$d" "$rep" "$check" "${kr[@]}" -n 4 -- $long
    job s1-8 "$d" "$rep" "$check" "${kr[@]}" -n 8 --
    job s2-dead0 "$d" "$rep" "$check" "${kr[@]}" -n 8 --replication 2 -- $long
    for dead in 1 1,6 1,6,3; do
      k=$(echo "$dead" | tr -cd , | wc -c)
      job "s2-dead$((k + 1))" "$d" "$rep" "$check" "${kr[@]}" -n 8 --replication 2 -- dead="$dead"
    done
    job s1-stop "$d" "$rep" "$check" "${kr[@]}" -n 4 -- slow=1 $long
    job s2-stop "$d" "$rep" "$check" "${kr[@]}" -n 8 --replication 2 -- slow=1 $long
    stall="slow=1 stop_ms=$stall_ms period_ms=$stall_period_ms"
    job s1-stall "$d" "$rep" "$check" "${kr[@]}" -n 4 -- $stall $long
    job s2-stall "$d" "$rep" "$check" "${kr[@]}" -n 8 --replication 2 -- $stall $long
    if [ "$link" = 1 ]; then
      for rate in off "$link_rate"; do
        bash "$slowlink" shape "$ns" "$veth" "$rate"
        sfx=$([ "$rate" = off ] || echo -slow)
        job "link-s1$sfx" "$d" "$rep" "$check" bash "$slowlink" launch "$ns" 1 4 1 -- $long
        job "link-s2$sfx" "$d" "$rep" "$check" bash "$slowlink" launch "$ns" 1 8 2 -- $long
      done
    fi
  done
  echo "LOAD after-rep-$rep $(load)" >>"$log"
done

{
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD -- core netio capi 2>/dev/null || commit="$commit+dirty"
  echo "Replication and packet racing, loopback TCP, $(nproc) cores, n=$n, densities $densities," \
    "$(date -u +%Y-%m-%dT%H:%MZ), commit $commit, $(($(date +%s) - start)) s"
  env | grep '^KYLIX_' | sed 's/^/env: /' || true
  echo
  python3 tests/bench/replication_table.py "$log"
} | if [ -n "$outfile" ]; then tee "$outfile"; else cat; fi
! grep -q 'bad=[1-9]' "$log"
