#!/usr/bin/env bash
# run_sparse.sh — Kylix against the paper's "direct all-to-all" sparse allreduce written in
# plain Open MPI ("Kylix: A Sparse Allreduce for Commodity Clusters", §VI, Table I), on the
# same Poisson power-law data (n = 10^7, α = 1, in = out, f32 SUM), over loopback TCP, in one
# run, so the ratios do not depend on the machine's mood. Also the dense comparison of
# compare_mpi.sh (16M f32, kylix_allreduce against MPI_Allreduce). One command from a fresh
# clone: builds the library if build/libkylix.so is missing and, as root, installs Open MPI.
#
#   tests/bench/run_sparse.sh [--quick] [--ranks="4 8"] [--densities="0.2 0.03"] [--n=1e7]
#                             [--reps=3] [--dense-ranks="2 4"] [--dense-count=16777216]
#                             [--out=FILE]
# Each option also comes from BENCH_RANKS, BENCH_DENSITIES, BENCH_N, BENCH_REPS,
# BENCH_DENSE_RANKS, BENCH_DENSE_COUNT (flags win); BENCH_MPI=defaults: Open MPI with its
# default transports (shared memory on one host) instead of TCP. --quick: n = 10^6, 1 rep, ranks 2 4, dense
# 1M (a smoke test, ~10 s); the full run takes ~4 min on 2 cores. BUILD=dir uses a library
# built elsewhere. Kylix options (KYLIX_DEGREES, KYLIX_THREADS, ...) pass through to
# kylix_init("") (threads defaults to the core count in every rank). BENCH_PHASES=1 makes
# mpi_direct print where its rank 0 spends config and reduce time (to stderr, with the log).
#
# Each program reports medians over its own iterations (config 3, reduce 10, one-shot 3,
# dense 5; each timed between barriers, max over ranks); the table shows the median over
# reps. The first rep checks every result against a brute force; later reps skip the check.
# "K reduce min-max" is the spread of Kylix's reduce over the reps (slowest / median after it).
# The last column lists the plans degrees=auto chose in Kylix's runs (it plans from link probes
# and compute rates measured in the run, so a crowded host can make it choose differently).
# Ranks beyond 2 share 2 cores: Open MPI runs with mpi_yield_when_idle 1 so waiting ranks
# give up the CPU instead of busy-polling (Kylix blocks in the kernel anyway). Not a test:
# `make test` does not run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${BENCH_RANKS:-4 8}
densities=${BENCH_DENSITIES:-0.2 0.03}
n=${BENCH_N:-1e7}
reps=${BENCH_REPS:-3}
dense_ranks=${BENCH_DENSE_RANKS:-2 4}
dense_count=${BENCH_DENSE_COUNT:-16777216}
outfile=
for a in "$@"; do
  case $a in
  --quick) ranks="2 4" n=1e6 reps=1 dense_count=1048576 ;;
  --ranks=*) ranks=${a#*=} ;;
  --densities=*) densities=${a#*=} ;;
  --n=*) n=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  --dense-ranks=*) dense_ranks=${a#*=} ;;
  --dense-count=*) dense_count=${a#*=} ;;
  --out=*) outfile=${a#*=} ;;
  *) sed -n '2,27p' "$0" >&2; exit 2 ;;
  esac
done
build=${BUILD:-build}

if ! echo '#include <mpi.h>' | mpicc -x c -fsyntax-only - >/dev/null 2>&1 || ! { mpirun --version 2>/dev/null | grep -q "Open MPI"; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "run_sparse: installing Open MPI (openmpi-bin libopenmpi-dev)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null ||
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin libopenmpi-dev >/dev/null; }
  else
    echo "run_sparse: needs Open MPI's mpicc and mpirun (Debian: openmpi-bin libopenmpi-dev)" >&2
    exit 1
  fi
fi
[ -e "$build/libkylix.so" ] || make
bin=$build/bench
mkdir -p "$bin"
cflags="-O2 -march=native -std=c11 -Wall -Wextra"
mpicc $cflags tests/bench/mpi_direct.c -o "$bin/mpi_direct" -lm
gcc $cflags -I"$build/include" tests/bench/kylix_sparse.c -L"$build" -lkylix \
  -Wl,-rpath,"$(cd "$build" && pwd)" -lm -o "$bin/kylix_sparse"
gcc -O2 -I"$build/include" tests/bench/kylix_allreduce.c -L"$build" -lkylix \
  -Wl,-rpath,"$(cd "$build" && pwd)" -o "$bin/kylix_allreduce"
mpicc -O2 tests/bench/mpi_allreduce.c -o "$bin/mpi_allreduce"

# BENCH_MPI=defaults runs Open MPI with its own transports (shared memory between the ranks of
# this host), as a user's plain mpirun would; the default is TCP over loopback.
if [ "${BENCH_MPI:-tcp}" = defaults ]; then
  mpirun=(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1)
else
  mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self
    --mca btl_tcp_if_include lo --mca mpi_yield_when_idle 1)
fi
log=$(mktemp /tmp/run_sparse.XXXXXX)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
load0=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
case $load0 in [0-9]*) awk -v l="$load0" 'BEGIN { exit !(l > 1) }' &&
  echo "run_sparse: load average $load0 before the start: other work shares the cores," \
    "the timings will be noisy" >&2 ;; esac
for ((rep = 1; rep <= reps; rep++)); do
  check=$((rep == 1 ? 1 : 0))
  for r in $ranks; do
    for d in $densities; do
      echo "rep $rep/$reps: ranks=$r density=$d n=$n" >&2
      "${mpirun[@]}" -x BENCH_PHASES="${BENCH_PHASES:-0}" -n "$r" "$bin/mpi_direct" n="$n" \
        density="$d" check=$check | grep '^RESULT\|^phases' | tee -a "$log" >&2 ||
        echo "run_sparse: mpi_direct failed (ranks=$r density=$d)" >&2
      "$build/kylixrun" -n "$r" -- "$bin/kylix_sparse" n="$n" density="$d" check=$check 2>&1 |
        grep '^RESULT\|^kylix_sparse: ranks=.* degrees \[' | tee -a "$log" >&2 ||
        echo "run_sparse: kylix_sparse failed (ranks=$r density=$d)" >&2
    done
  done
  for r in $dense_ranks; do
    "${mpirun[@]}" -n "$r" "$bin/mpi_allreduce" "$dense_count" 5 | sed 's/^/DENSE /' | tee -a "$log" >&2
    "$build/kylixrun" -n "$r" -- "$bin/kylix_allreduce" "$dense_count" 5 | sed 's/^/DENSE /' | tee -a "$log" >&2
  done
done
if grep -q 'check=FAIL' "$log"; then echo "run_sparse: a result check FAILED" >&2; fi

table() {
  awk -v reps="$reps" '
    function med(key,   k, i, j, t, v) {
      k = cnt[key]; if (!k) return "-"
      for (i = 1; i <= k; i++) v[i] = val[key, i]
      for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    function ext(key, hi,   k, i, e) {
      k = cnt[key]; if (!k) return "-"
      e = val[key, 1]
      for (i = 2; i <= k; i++) if (hi ? val[key, i] > e : val[key, i] < e) e = val[key, i]
      return e
    }
    function put(key, x) { val[key, ++cnt[key]] = x }
    function f(x) { return x == "-" ? "-" : sprintf(x >= 100 ? "%.0f" : "%.1f", x) }
    function q(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
    /^kylix_sparse: ranks=.* degrees \[/ { plan = $NF; next } # the plan degrees=auto chose, before its RESULT
    /^RESULT/ {
      delete kv
      for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
      c = kv["ranks"] SUBSEP kv["density"]
      if (!(c in seen)) { seen[c] = 1; order[++nc] = c; keys[c] = kv["keys_per_rank"] }
      if (kv["check"] == "FAIL") bad[c] = 1
      if (kv["check"] == "OK") ok[c] = 1
      if (kv["impl"] == "kylix" && plan != "") { runs[c, plan]++; if (!((c, plan) in pseen)) { pseen[c, plan] = 1; plist[c] = plist[c] (plist[c] == "" ? "" : " ") plan }; plan = "" }
      for (m in kv) if (m ~ /_ms$/) put(kv["impl"] SUBSEP c SUBSEP m, kv[m])
    }
    /^DENSE/ {
      r = $3; sub("ranks=", "", r); cn = $4; sub("count=", "", cn); sub(":", "", cn)
      if (!(r in dseen)) { dseen[r] = 1; dorder[++nd] = r }
      put($2 SUBSEP r, $5); dcount = cn
    }
    END {
      print "Sparse (ms, median of " reps " runs; ratio = Kylix / MPI direct):"
      print ""
      print "| ranks | density | keys/rank | config K / M | ratio | reduce K / M | ratio | one-shot K config_reduce / M config+reduce | ratio | M dense MPI_Allreduce of the n-vector | one-shot K / M dense | K dense allreduce | K reduce min-max (slowest / median) | check | K plans (runs) |"
      print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
      for (i = 1; i <= nc; i++) {
        c = order[i]; split(c, rd, SUBSEP)
        kc = med("kylix" SUBSEP c SUBSEP "config_ms"); mc = med("mpi" SUBSEP c SUBSEP "config_ms")
        kr = med("kylix" SUBSEP c SUBSEP "reduce_ms"); mr = med("mpi" SUBSEP c SUBSEP "reduce_ms")
        ko = med("kylix" SUBSEP c SUBSEP "config_reduce_ms"); mo = med("mpi" SUBSEP c SUBSEP "config_reduce_ms")
        md = med("mpi" SUBSEP c SUBSEP "dense_ms"); kd = med("kylix" SUBSEP c SUBSEP "dense_ms")
        np = split(plist[c], P, " "); pl = ""
        for (j = 1; j <= np; j++) pl = pl (j > 1 ? ", " : "") P[j] " (" runs[c, P[j]] ")"
        kn = ext("kylix" SUBSEP c SUBSEP "reduce_ms", 0); kx = ext("kylix" SUBSEP c SUBSEP "reduce_ms", 1)
        printf "| %s | %s | %s | %s / %s | %s | %s / %s | %s | %s / %s | %s | %s | %s | %s | %s-%s (%s) | %s | %s |\n",
          rd[1], rd[2], keys[c], f(kc), f(mc), q(kc, mc), f(kr), f(mr), q(kr, mr), f(ko), f(mo), q(ko, mo),
          f(md), q(ko, md), f(kd), f(kn), f(kx), q(kx, kr), bad[c] ? "FAIL" : ok[c] ? "OK" : "-", pl == "" ? "-" : pl
      }
      if (nd) {
        print ""
        print "Dense allreduce, " dcount " f32 (ms per allreduce, median of " reps " runs of 5):"
        print ""
        print "| ranks | Kylix | Open MPI MPI_Allreduce | ratio |"
        print "|---|---|---|---|"
        for (i = 1; i <= nd; i++) {
          r = dorder[i]; k = med("kylix" SUBSEP r); m = med("mpi" SUBSEP r)
          printf "| %s | %s | %s | %s |\n", r, f(k), f(m), q(k, m)
        }
      }
    }' "$log"
}
{
  echo "Kylix vs direct all-to-all (Open MPI $(mpirun --version 2>/dev/null | sed -n '1s/.*) //p')," \
    "MPI over ${BENCH_MPI:-tcp}, $(nproc) cores, n=$n, $(date -u +%Y-%m-%dT%H:%MZ)," \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- core netio capi 2>/dev/null || echo '+dirty')," \
    "$(($(date +%s) - start)) s, 1-min load average $load0 before / $(cut -d' ' -f1 /proc/loadavg 2>/dev/null) after"
  env | grep '^KYLIX_' | sed 's/^/env: /' || true
  echo
  table
} | if [ -n "$outfile" ]; then tee "$outfile"; else cat; fi
! grep -q 'check=FAIL' "$log"
