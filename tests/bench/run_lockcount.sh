#!/usr/bin/env bash
# run_lockcount.sh — locked instructions (LOCK-prefixed and XCHG with memory: each a full fence
# on amd64, about 20 cycles uncontended, and a wait for the store buffer to drain) that one
# 8-float kylix_allreduce executes on rank 0 of 2, counted exactly: rank 0 runs under valgrind's
# callgrind with per-instruction counts, and lockcount.py matches them against the locked
# instructions of libkylix.so's disassembly. Prints the count a call and where they are.
#
#   tests/bench/run_lockcount.sh [--reduce] [calls]   (default 100000; needs valgrind, gcc, objdump)
#
# --reduce counts the 248-key reduce on a kept plan instead (kylix_sparse lat=calls keys=256,
# which runs the reduce loop and then the 8-float loop; the allreduce's own count, from a
# second run, is taken off). valgrind has no AVX-512: the programs are built without
# -march=native, and the library runs its plain-Go kernels (KYLIX_NOSIMD=1).
#
# BUILD=dir counts another build's library. Not a timing: the count does not depend on the
# machine's mood, which makes it a steady figure to compare builds by. (docs/measurements.md,
# "Small steps: locked instructions, counted")
set -euo pipefail
cd "$(dirname "$0")/../.."
reduce=0
if [ "${1:-}" = --reduce ]; then reduce=1; shift; fi
calls=${1:-100000}
build=$(cd "${BUILD:-build}" && pwd)
[ -e "$build/libkylix.so" ] || make
command -v valgrind >/dev/null || { echo "run_lockcount: needs valgrind (Debian: valgrind)" >&2; exit 1; }
out=$(mktemp -d /tmp/lockcount.XXXXXX)
trap 'rm -rf "$out"' EXIT
gcc -O2 -std=c11 -I"$build/include" tests/bench/kylix_allreduce.c -L"$build" -lkylix \
  -Wl,-rpath,"$build" -o "$out/ar"
gcc -O2 -std=c11 -I"$build/include" tests/bench/kylix_sparse.c -L"$build" -lkylix \
  -Wl,-rpath,"$build" -lm -o "$out/sparse"
# count OUT PROGRAM ARGS...: rank 0 under callgrind. Asynchronous preemption's signals trip
# callgrind; the loops need none.
count() {
  local cg=$1
  shift
  GODEBUG=asyncpreemptoff=1 KYLIX_NOSIMD=1 "$build/kylixrun" -n 2 -- sh -c \
    'if [ "$KYLIX_RANK" = 0 ]; then exec valgrind -q --log-file="$0.log" --tool=callgrind --dump-instr=yes --callgrind-out-file="$0" "$@"; else exec "$@"; fi' \
    "$cg" "$@" >/dev/null
}
count "$out/ar.cg" "$out/ar" 8 "$calls"
if [ "$reduce" = 0 ]; then
  python3 tests/bench/lockcount.py "$out/ar.cg" "$build/libkylix.so" "$calls"
  exit 0
fi
count "$out/sparse.cg" "$out/sparse" n=1e6 lat="$calls" keys=256 check=0
python3 tests/bench/lockcount.py "$out/ar.cg" "$build/libkylix.so" "$calls" > "$out/ar.txt"
python3 tests/bench/lockcount.py "$out/sparse.cg" "$build/libkylix.so" "$calls" > "$out/both.txt"
# Each line: a call's count and a function; the reduce's is the pair's less the allreduce's.
python3 - "$out/both.txt" "$out/ar.txt" <<'PY'
import sys
def read(p):
    lines = open(p).read().splitlines()
    total = float(lines[0].split(":")[1])
    per = {l.split(None, 1)[1]: float(l.split()[0]) for l in lines[1:]}
    return total, per
both, bper = read(sys.argv[1])
ar, aper = read(sys.argv[2])
print(f"locked instructions a reduce: {both - ar:.1f} (reduce and allreduce {both:.1f}, allreduce {ar:.1f})")
rows = sorted(((v - aper.get(f, 0.0), f) for f, v in bper.items()), reverse=True)
for v, f in rows:
    if v >= 0.2:
        print(f"{v:6.2f}  {f}")
PY
