#!/usr/bin/env bash
# run_small_bindings.sh — the 8-float allreduce from Python and Java against mpi4py, same run:
# Kylix's Python binding (small_py.py), the bare ctypes call under it with its arguments
# prepared once (ctypes-floor: what any ctypes binding pays) and the Java binding
# (SmallAllreduce.java) on 2 ranks under kylixrun, mpi4py's Allreduce under Open MPI over TCP
# (--mca btl tcp,self) and with its defaults (shared memory), alternated `reps` times; prints
# each run's mean per call (µs, the slowest rank's) and the medians. Not a test. Needs
# `make all`, the binding builds
# (bindings/java/target from `mvn package`) and a Python with numpy and mpi4py (PYTHON, default
# build/userpaths-venv/bin/python3, which `make test` sets up).
#
#   tests/bench/run_small_bindings.sh [reps=3] [iters=20000]
# KYLIX_BUILDS="name=dir ..." (as run_latency.sh) compares library builds; PY_TREES="name=dir ..."
# compares Python binding trees (directories holding the kylix package, default
# py=bindings/python), e.g. PY_TREES="py-before=/tmp/old/bindings/python py=bindings/python".
# Without bindings/java/target (mvn package) the Java runs are left out, and the table says so.
# PCT=1 times the Python calls one by one (small_py.py's `pct`) and adds the medians of rank
# 0's 25th percentile per call, which a machine shared with other work disturbs far less.
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-3}
iters=${2:-20000}
py=${PYTHON:-build/userpaths-venv/bin/python3}
builds=${KYLIX_BUILDS:-kylix=build}
trees=${PY_TREES:-py=bindings/python}
jdir=$(mktemp -d)
jar=bindings/java/target/kylix-0.1.0.jar
java=yes
if [ -e "$jar" ]; then
  jna=$(ls bindings/java/target/lib/jna-*.jar | head -1)
  javac -cp "$jar" -d "$jdir" tests/bench/SmallAllreduce.java
else
  java=no
fi
mpi=(mpirun --allow-run-as-root --oversubscribe -n 2)
declare -A all
add() { all[$1]="${all[$1]:-} $2"; }
pct=${PCT:+pct}
p25s=$(mktemp)
trap 'rm -rf "$jdir" "$p25s"' EXIT
mean() { sed -n 's/.*mean_us=\([0-9.]*\).*/\1/p' | tail -1; }
run() { # run <name> <command...>: the command's mean per call; with PCT=1 its p25 filed
  local name=$1 out
  shift
  out=$("$@")
  if [ -n "$pct" ]; then
    echo "$name $(echo "$out" | sed -n 's/.*p25_us=\([0-9.]*\).*/\1/p' | tail -1)" >>"$p25s"
  fi
  echo "$out" | sed -n 's/.*mean_us=\([0-9.]*\).*/\1/p' | tail -1
}
for ((i = 1; i <= reps; i++)); do
  for b in $builds; do
    name=${b%%=*} dir=${b#*=}
    for t in $trees; do
      tname=${t%%=*} tdir=${t#*=}
      add "$tname-$name" "$(PYTHONPATH="$tdir" KYLIX_LIBRARY="$dir" run "$tname-$name" build/kylixrun -n 2 -- "$py" tests/bench/small_py.py kylix "$iters" $pct)"
    done
    add "ctypes-floor-$name" "$(PYTHONPATH=bindings/python KYLIX_LIBRARY="$dir" run "ctypes-floor-$name" build/kylixrun -n 2 -- "$py" tests/bench/small_py.py ctypes "$iters" $pct)"
    if [ "$java" = yes ]; then
      add "java-$name" "$(build/kylixrun -n 2 -- java -Dkylix.library.path="$dir/libkylix.so" -cp "$jar:$jna:$jdir" SmallAllreduce "$iters" | mean)"
    fi
  done
  add mpi4py-tcp "$(run mpi4py-tcp "${mpi[@]}" --mca btl tcp,self "$py" tests/bench/small_py.py mpi "$iters" $pct)"
  add mpi4py-defaults "$(run mpi4py-defaults "${mpi[@]}" "$py" tests/bench/small_py.py mpi "$iters" $pct)"
done
[ "$java" = yes ] || echo "(no $jar: the Java binding was not measured; mvn package in bindings/java builds it)"
echo "8-float allreduce, 2 ranks, $iters calls a run, $reps runs; µs per call (slowest rank's mean): runs, median"
for k in $(echo "${!all[@]}" | tr ' ' '\n' | sort); do
  med=$(echo ${all[$k]} | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "$k: ${all[$k]} | median $med"
done
if [ -n "$pct" ]; then
  echo "rank 0's 25th percentile per call (µs): runs, median"
  for k in $(cut -d' ' -f1 "$p25s" | sort -u); do
    v=$(awk -v k="$k" '$1 == k {print $2}' "$p25s" | tr '\n' ' ')
    med=$(echo $v | tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "$k p25: $v| median $med"
  done
fi
