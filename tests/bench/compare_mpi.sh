#!/usr/bin/env bash
# Dense allreduce of COUNT f32 (default 16M) on 2 and 4 ranks: Kylix against Open MPI's
# MPI_Allreduce over its TCP transport on loopback, in the same run. Needs `make` first and
# Debian's openmpi-bin + libopenmpi-dev. Not part of `make test` (a benchmark, not a check).
set -euo pipefail
cd "$(dirname "$0")/../.."
count=${1:-16777216}
iters=${2:-5}
out=build/bench
mkdir -p "$out"
gcc -O2 -Ibuild/include tests/bench/kylix_allreduce.c -Lbuild -lkylix -Wl,-rpath,"$PWD/build" -o "$out/kylix_allreduce"
mpicc -O2 tests/bench/mpi_allreduce.c -o "$out/mpi_allreduce"
for n in 2 4; do
  build/kylixrun -n "$n" -- "$out/kylix_allreduce" "$count" "$iters"
  mpirun --allow-run-as-root --oversubscribe -n "$n" --mca btl tcp,self \
    --mca btl_tcp_if_include lo "$out/mpi_allreduce" "$count" "$iters"
done
