#!/usr/bin/env bash
# run_latency.sh — the small-step latency benchmark: 2000 back-to-back reduces of
# a kept plan (in = out, f32 SUM, width 1, Poisson power-law keys of powerlaw.h) and 2000
# 8-float dense allreduces, Kylix through the C ABI (kylix_sparse.c lat=N) against the paper's
# direct all-to-all in plain Open MPI (mpi_direct.c lat=N) and MPI_Allreduce, Open MPI once
# over TCP on loopback (--mca btl tcp,self) and once with its defaults (shared memory between
# the ranks of a host). Every configuration runs each implementation back to back, `reps`
# times; the table gives the median over reps of the slowest rank's mean per call (and of the
# slowest rank's median per call) and the ratios Kylix / MPI. Not a test: `make test` does
# not run it.
#
#   tests/bench/run_latency.sh [--ranks="2 4"] [--keys="256 4096 32768"] [--iters=2000]
#                              [--reps=3] [--out=FILE]
# Each option also comes from BENCH_RANKS, BENCH_KEYS, BENCH_ITERS, BENCH_REPS (flags win).
# KYLIX_BUILDS="name=dir[@VAR=val,VAR=val] ..." compares several builds of the library, or
# one build under several environments, in the same run (each dir holds a libkylix.so and
# include/kylix.h, e.g. a baseline and a prototype; "fast=build@KYLIX_DEGREES=direct" runs
# build's with that variable set); the default is "kylix=build" (built with `make` when
# missing). Kylix options (KYLIX_DEGREES, ...) pass
# through to kylix_init(""). Ranks beyond the core count are oversubscribed: Open MPI then
# yields when idle on its own (--oversubscribe); Kylix blocks in the kernel anyway.
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${BENCH_RANKS:-2 4}
keys=${BENCH_KEYS:-256 4096 32768}
iters=${BENCH_ITERS:-2000}
reps=${BENCH_REPS:-3}
builds=${KYLIX_BUILDS:-kylix=build}
outfile=
for a in "$@"; do
  case $a in
  --ranks=*) ranks=${a#*=} ;;
  --keys=*) keys=${a#*=} ;;
  --iters=*) iters=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  --out=*) outfile=${a#*=} ;;
  *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
done
if ! echo '#include <mpi.h>' | mpicc -x c -fsyntax-only - >/dev/null 2>&1; then # mpicc and mpi.h (libopenmpi-dev)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run_latency: installing Open MPI (openmpi-bin libopenmpi-dev)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null
  else
    echo "run_latency: needs Open MPI's mpicc and mpirun (Debian: openmpi-bin libopenmpi-dev)" >&2
    exit 1
  fi
fi
[ "$builds" != kylix=build ] || [ -e build/libkylix.so ] || make
mkdir -p build/bench
cflags="-O2 -march=native -std=c11 -Wall -Wextra"
mpicc $cflags tests/bench/mpi_direct.c -o build/bench/mpi_direct -lm
bdir() { b=${1#*=}; echo "${b%%@*}"; }
benv() { case $1 in *@*) b=${1#*@}; echo "${b//,/ }" ;; esac; }
for b in $builds; do
  d=$(cd "$(bdir "$b")" && pwd)
  mkdir -p "$d/bench"
  gcc $cflags -I"$d/include" tests/bench/kylix_sparse.c -L"$d" -lkylix -Wl,-rpath,"$d" -lm \
    -o "$d/bench/kylix_sparse"
done

mpi=(mpirun --allow-run-as-root --oversubscribe)
tcp=(--mca btl tcp,self --mca btl_tcp_if_include lo)
log=$(mktemp /tmp/run_latency.XXXXXX)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
args="n=1e6 lat=$iters"
for ((rep = 1; rep <= reps; rep++)); do
  check=$((rep == 1 ? 1 : 0))
  for r in $ranks; do
    for k in $keys; do
      echo "rep $rep/$reps: ranks=$r keys=$k" >&2
      "${mpi[@]}" "${tcp[@]}" -n "$r" build/bench/mpi_direct $args keys="$k" check=$check |
        sed -n 's/^LAT impl=mpi/LAT impl=mpi-tcp/p' | tee -a "$log" >&2 || echo "run_latency: mpi tcp failed" >&2
      "${mpi[@]}" -n "$r" build/bench/mpi_direct $args keys="$k" check=$check |
        sed -n 's/^LAT impl=mpi/LAT impl=mpi-def/p' | tee -a "$log" >&2 || echo "run_latency: mpi failed" >&2
      for b in $builds; do
        env $(benv "$b") build/kylixrun -n "$r" -- "$(bdir "$b")/bench/kylix_sparse" $args keys="$k" check=$check |
          sed -n "s/^LAT impl=kylix/LAT impl=${b%%=*}/p" | tee -a "$log" >&2 ||
          echo "run_latency: ${b%%=*} failed" >&2
      done
    done
  done
done
if grep -q 'check=FAIL' "$log"; then echo "run_latency: a result check FAILED" >&2; fi

{
  echo "Small-step latency, Open MPI $(mpirun --version 2>/dev/null | sed -n '1s/.*) //p')," \
    "$(nproc) cores, $iters calls a run, median of $reps runs, $(date -u +%Y-%m-%dT%H:%MZ)," \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- core netio capi 2>/dev/null || echo '+dirty')," \
    "$(($(date +%s) - start)) s, 1-min load $load0 before / $(cut -d' ' -f1 /proc/loadavg 2>/dev/null) after"
  env | grep '^KYLIX_' | sed 's/^/env: /' || true
  echo
  echo "µs per call, the slowest rank's mean (its median per call in parentheses); ratios of the means."
  echo
  awk -v builds="$builds" '
    function med(key,   k, i, j, t, v) {
      k = cnt[key]; if (!k) return "-"
      for (i = 1; i <= k; i++) v[i] = val[key, i]
      for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    function f(x) { return x == "-" ? "-" : sprintf(x >= 100 ? "%.0f" : x >= 1 ? "%.1f" : "%.2f", x) }
    function q(a, b) { return (a == "-" || b == "-" || b <= 0) ? "-" : sprintf("%.2f", a / b) }
    /^LAT/ {
      delete kv
      for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
      c = kv["ranks"] SUBSEP kv["op"] SUBSEP kv["keys_per_rank"]
      # dense8 comes from every run: one row per rank count
      if (kv["op"] == "dense8") c = kv["ranks"] SUBSEP "dense8" SUBSEP 8
      if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
      if (kv["check"] == "FAIL") bad[c] = 1
      m = kv["impl"] SUBSEP c
      val[m SUBSEP "mean", ++cnt[m SUBSEP "mean"]] = kv["mean_us"]
      val[m SUBSEP "med", ++cnt[m SUBSEP "med"]] = kv["median_us"]
    }
    END {
      nb = split(builds, B, " ")
      for (i = 1; i <= nb; i++) sub("=.*", "", B[i])
      hdr = "| ranks | op | keys/rank |"; sep = "|---|---|---|"
      for (i = 1; i <= nb; i++) { hdr = hdr " " B[i] " |"; sep = sep "---|" }
      hdr = hdr " MPI TCP | MPI defaults |"; sep = sep "---|---|"
      for (i = 1; i <= nb; i++) { hdr = hdr " " B[i] " / TCP | " B[i] " / defaults |"; sep = sep "---|---|" }
      print hdr; print sep
      for (n = 1; n <= nc; n++) {
        c = order[n]; split(c, rk, SUBSEP)
        line = "| " rk[1] " | " rk[2] " | " rk[3] (bad[c] ? " FAIL" : "") " |"
        for (i = 1; i <= nb + 2; i++) {
          im = i <= nb ? B[i] : (i == nb + 1 ? "mpi-tcp" : "mpi-def")
          line = line " " f(med(im SUBSEP c SUBSEP "mean")) " (" f(med(im SUBSEP c SUBSEP "med")) ") |"
        }
        t = med("mpi-tcp" SUBSEP c SUBSEP "mean"); d = med("mpi-def" SUBSEP c SUBSEP "mean")
        for (i = 1; i <= nb; i++) { k = med(B[i] SUBSEP c SUBSEP "mean"); line = line " " q(k, t) " | " q(k, d) " |" }
        print line
      }
    }' "$log"
} | if [ -n "$outfile" ]; then tee "$outfile"; else cat; fi
! grep -q 'check=FAIL' "$log"
