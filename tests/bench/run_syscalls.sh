#!/usr/bin/env bash
# run_syscalls.sh — system calls per small call in the steady state: each rank of a job of
# back-to-back 8-float kylix_allreduce calls (kylix_allreduce.c) is counted by `perf stat -e
# raw_syscalls:sys_enter` (or `strace -f -c` where perf cannot count), once for a short and
# once for a long run; the difference over the difference in calls leaves out start-up and
# finalize. Each build of KYLIX_BUILDS runs in turn, `reps` times; the table gives the median
# per rank and the split of the long run (sched_yield, futex, epoll_pwait, write, nanosleep).
# Not a test: `make test` does not run it. Only a quiet machine tells the steady state: other
# work on the cores makes waits longer, and a wait that outlasts its spin offers the CPU.
#
#   tests/bench/run_syscalls.sh [--ranks="2 4"] [--short=2000] [--long=20000] [--reps=3]
# KYLIX_BUILDS="name=dir ..." as in run_latency.sh (default "kylix=build").
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks="2" short=2000 long=20000 reps=3
builds=${KYLIX_BUILDS:-kylix=build}
for a in "$@"; do
  case $a in
  --ranks=*) ranks=${a#*=} ;;
  --short=*) short=${a#*=} ;;
  --long=*) long=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
  esac
done
[ "$builds" != kylix=build ] || [ -e build/libkylix.so ] || make
tmp=$(mktemp -d /tmp/run_syscalls.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
events=raw_syscalls:sys_enter,syscalls:sys_enter_sched_yield,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_write,syscalls:sys_enter_nanosleep
if perf stat -e raw_syscalls:sys_enter -x, -o "$tmp/probe" true 2>/dev/null; then tool=perf; else tool=strace; fi
for b in $builds; do
  d=$(cd "${b#*=}" && pwd)
  gcc -O2 -I"$d/include" tests/bench/kylix_allreduce.c -L"$d" -lkylix -Wl,-rpath,"$d" -o "$tmp/${b%%=*}"
done
# count BIN N TAG: one counts file per rank, $tmp/TAG.RANK: "total yield futex epoll write nanosleep"
count() {
  local bin=$1 n=$2 tag=$3 r=$4
  if [ $tool = perf ]; then
    build/kylixrun -n "$r" -- sh -c "exec perf stat -e $events -x, -o $tmp/$tag.raw.\$KYLIX_RANK $bin 8 $n" >/dev/null
    for f in "$tmp/$tag".raw.*; do
      awk -F, '/sys_enter/ { v[$3] = $1 } END { print v["raw_syscalls:sys_enter"]+0, v["syscalls:sys_enter_sched_yield"]+0,
        v["syscalls:sys_enter_futex"]+0, v["syscalls:sys_enter_epoll_pwait"]+0, v["syscalls:sys_enter_write"]+0,
        v["syscalls:sys_enter_nanosleep"]+0 }' "$f" >"${f/.raw/}"
    done
  else
    build/kylixrun -n "$r" -- sh -c "exec strace -f -c -o $tmp/$tag.raw.\$KYLIX_RANK $bin 8 $n" >/dev/null
    for f in "$tmp/$tag".raw.*; do
      awk '/total/ { t = $4 } $NF == "sched_yield" { y = $4 } $NF == "futex" { x = $4 } $NF == "epoll_pwait" { e = $4 }
        $NF == "write" { w = $4 } $NF == "nanosleep" { s = $4 } END { print t+0, y+0, x+0, e+0, w+0, s+0 }' "$f" >"${f/.raw/}"
    done
  fi
}
echo "System calls per 8-float allreduce ($tool; runs of $short and $long calls; median of $reps)," \
  "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), 1-min load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| build | ranks | rank | per call | sched_yield | futex | epoll_pwait | write | nanosleep |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $ranks; do
  for ((rep = 1; rep <= reps; rep++)); do
    for b in $builds; do
      name=${b%%=*}
      count "$tmp/$name" "$short" "s.$name.$rep" "$r"
      count "$tmp/$name" "$long" "l.$name.$rep" "$r"
    done
  done
  for b in $builds; do
    name=${b%%=*}
    for ((k = 0; k < r; k++)); do
      for ((rep = 1; rep <= reps; rep++)); do
        paste -d' ' "$tmp/s.$name.$rep.$k" "$tmp/l.$name.$rep.$k"
      done | awk -v calls=$((long - short)) -v b="$name" -v r="$r" -v k="$k" '
        { for (i = 1; i <= 6; i++) d[NR, i] = ($(i + 6) - $i) / calls; n = NR }
        function med(i,   j, a, m, t, x) { for (j = 1; j <= n; j++) a[j] = d[j, i]
          for (j = 2; j <= n; j++) { t = a[j]; for (x = j - 1; x >= 1 && a[x] > t; x--) a[x + 1] = a[x]; a[x + 1] = t }
          return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { printf "| %s | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", b, r, k, med(1), med(2), med(3), med(4), med(5), med(6) }'
    done
  done
done
