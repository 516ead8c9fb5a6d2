#!/usr/bin/env bash
# run_lockcount.sh — locked instructions (LOCK-prefixed and XCHG with memory: each a full fence
# on amd64, about 20 cycles uncontended, and a wait for the store buffer to drain) that one
# 8-float kylix_allreduce executes on rank 0 of 2, counted exactly: rank 0 runs under valgrind's
# callgrind with per-instruction counts, and lockcount.py matches them against the locked
# instructions of libkylix.so's disassembly. Prints the count a call and where they are.
#
#   tests/bench/run_lockcount.sh [calls]     (default 100000; needs valgrind, gcc, objdump)
#
# BUILD=dir counts another build's library. Not a timing: the count does not depend on the
# machine's mood, which makes it a steady figure to compare builds by. (docs/measurements.md,
# "Small steps: locked instructions, counted")
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-100000}
build=$(cd "${BUILD:-build}" && pwd)
[ -e "$build/libkylix.so" ] || make
command -v valgrind >/dev/null || { echo "run_lockcount: needs valgrind (Debian: valgrind)" >&2; exit 1; }
out=$(mktemp -d /tmp/lockcount.XXXXXX)
trap 'rm -rf "$out"' EXIT
gcc -O2 -std=c11 -I"$build/include" tests/bench/kylix_allreduce.c -L"$build" -lkylix \
  -Wl,-rpath,"$build" -o "$out/ar"
# Asynchronous preemption's signals trip callgrind; the loop needs none.
GODEBUG=asyncpreemptoff=1 "$build/kylixrun" -n 2 -- sh -c \
  'if [ "$KYLIX_RANK" = 0 ]; then exec valgrind -q --log-file="$0/valgrind.log" --tool=callgrind --dump-instr=yes --callgrind-out-file="$0/cg.out" "$@"; else exec "$@"; fi' \
  "$out" "$out/ar" 8 "$calls" >/dev/null
python3 tests/bench/lockcount.py "$out/cg.out" "$build/libkylix.so" "$calls"
