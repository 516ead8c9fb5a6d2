#!/usr/bin/env bash
# run_net.sh — Kylix on loopback and on shaped links, with index compression off, lz4 and auto,
# beside what the cost model (core/costmodel.go, `kylix plan --link`) predicts for the same
# runs. 4 ranks of tests/bench/kylix_net.c (Poisson power-law data of powerlaw.h, n = 10^7,
# in = out, f32 SUM): on loopback under kylixrun, and as two "hosts" of two ranks in network
# namespaces joined by a veth pair shaped with tc tbf (tests/netns/up.sh, shape.sh, job.sh;
# this kernel has no netem) at 1 Gbit/s and 200 Mbit/s.
#
#   tests/bench/run_net.sh [--quick] [--n=1e7] [--densities="0.2 0.03"] [--reps=3]
#                          [--links="loopback 1gbit 200mbit"] [--compress="off lz4 auto"]
#                          [--degrees="auto direct 2x2"] [--out=FILE]
# Each option also comes from BENCH_N, BENCH_DENSITIES, BENCH_REPS, BENCH_LINKS,
# BENCH_COMPRESS, BENCH_DEGREES (flags win). --quick: n = 10^6, 1 rep. BUILD=dir uses a library
# built elsewhere. Shaped links need root (ip netns, tc); without it they are skipped, saying so.
#
# Every run's RESULT line carries medians over its own iterations (config 3, reduce 10,
# config_reduce 3, each the slowest rank's time between barriers); the table shows the median
# over reps, the reps alternating over the settings so that a slow minute of the machine does
# not fall on one setting. The model's inputs: the host link measured by `kylix bench --links`
# with one rank per namespace (loopback: the 4-rank loopback measurement), the link between
# ranks of one host measured on loopback with 4 ranks, this machine's compute rates (kylix
# plan measures them) slowed by 4 ranks / 2 cores, the index ratio each run measured, and the
# degrees each run used. The machine is shared: the header gives the load average before and
# after. Not a test: `make test` does not run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${BENCH_N:-1e7}
densities=${BENCH_DENSITIES:-0.2 0.03}
reps=${BENCH_REPS:-3}
links=${BENCH_LINKS:-loopback 1gbit 200mbit}
compress=${BENCH_COMPRESS:-off lz4 auto}
degrees=${BENCH_DEGREES:-auto direct 2x2}
outfile=
for a in "$@"; do
  case $a in
  --quick) n=1e6 reps=1 ;;
  --n=*) n=${a#*=} ;;
  --densities=*) densities=${a#*=} ;;
  --reps=*) reps=${a#*=} ;;
  --links=*) links=${a#*=} ;;
  --compress=*) compress=${a#*=} ;;
  --degrees=*) degrees=${a#*=} ;;
  --out=*) outfile=${a#*=} ;;
  *) sed -n '2,25p' "$0" >&2; exit 2 ;;
  esac
done
build=${BUILD:-build}
[ -e "$build/libkylix.so" ] && [ -e "$build/kylix" ] || make
bin=$build/bench
mkdir -p "$bin"
gcc -O2 -march=native -std=c11 -Wall -Wextra -Wno-unused-function -I"$build/include" tests/bench/kylix_net.c \
  -L"$build" -lkylix -Wl,-rpath,"$(cd "$build" && pwd)" -lm -o "$bin/kylix_net"
net=$(cd "$bin" && pwd)/kylix_net
kylix=$(cd "$build" && pwd)/kylix
tmp=$(mktemp -d /tmp/run_net.XXXXXX)
nsa=kxb-a-$$ nsb=kxb-b-$$ veth=kxb$$
cleanup() { sh tests/netns/down.sh "$nsa" "$nsb"; rm -rf "$tmp"; }
trap cleanup EXIT
log=$tmp/log
start=$(date +%s)
load0=$(cut -d' ' -f1 /proc/loadavg)

# This machine's compute rates, once, before the runs load it; then the link between ranks of
# one host, as 4 loopback ranks see it (also the loopback "host link").
"$kylix" plan --features 1e6 --density 0.1 --ranks 4 --link ec2 --rates-json "$tmp/rates.json" >/dev/null
"$build/kylixrun" -n 4 "$kylix" bench --links --links-json "$tmp/loop.json" >"$tmp/loop.txt"

for link in $links; do
  runner=("$build/kylixrun" -n 4)
  if [ "$link" != loopback ]; then
    if [ "$(id -u)" != 0 ] || ! command -v tc >/dev/null; then
      echo "run_net: skipping $link: shaped links need root and tc (iproute2)" >&2
      continue
    fi
    sh tests/netns/down.sh "$nsa" "$nsb"
    sh tests/netns/up.sh "$nsa" "$nsb" "$veth"
    sh tests/netns/shape.sh "$nsa" "$veth-a" "$link"
    sh tests/netns/shape.sh "$nsb" "$veth-b" "$link"
    runner=(sh tests/netns/job.sh "$nsa" "$nsb" 4 600)
    # The host link itself: one rank on each side.
    sh tests/netns/job.sh "$nsa" "$nsb" 2 60 "$kylix" bench --links --links-json "$tmp/$link.json" >"$tmp/$link.txt"
  else
    cp "$tmp/loop.json" "$tmp/$link.json"
  fi
  echo "link $link: $(sed -n 2p "$tmp/$link.txt" 2>/dev/null || sed -n 2p "$tmp/loop.txt")" >&2
  for ((rep = 1; rep <= reps; rep++)); do
    for d in $densities; do
      for c in $compress; do
        for g in $degrees; do
          echo "rep $rep/$reps: link=$link density=$d compress=$c degrees=$g" >&2
          KYLIX_COMPRESS=$c KYLIX_DEGREES=$g "${runner[@]}" "$net" n="$n" density="$d" check=$((rep == 1)) |
            grep '^RESULT' | sed "s/^RESULT /RESULT link=$link degopt=$g /" | tee -a "$log" >&2 ||
            echo "run_net: failed: link=$link density=$d compress=$c degrees=$g" >&2
        done
      done
    done
  done
  if [ "$link" != loopback ]; then sh tests/netns/down.sh "$nsa" "$nsb"; fi
done

# Medians per setting, then the model's prediction for each.
awk '
  function med(key,   k, i, j, t, v) {
    k = cnt[key]
    for (i = 1; i <= k; i++) v[i] = val[key, i]
    for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  /^RESULT/ {
    delete kv
    for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
    c = kv["link"] SUBSEP kv["density"] SUBSEP kv["compress"] SUBSEP kv["degopt"]
    if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
    if (!(c in deg)) deg[c] = kv["degrees"]
    else if (index("/" deg[c] "/", "/" kv["degrees"] "/") == 0) deg[c] = deg[c] "/" kv["degrees"]
    keys[c] = kv["keys_per_rank"]; n = kv["n"]
    if (kv["check"] == "FAIL") bad[c] = 1
    for (m in kv) if (m ~ /_ms$|^index_/) { cnt[c, m]++; val[c, m, cnt[c, m]] = kv[m] }
  }
  END {
    for (i = 1; i <= nc; i++) {
      c = order[i]; split(c, f, SUBSEP)
      printf "ROW %s %s %s %s %s %s %s %s %s %s %s %s\n", f[1], f[2], f[3], f[4], deg[c], keys[c] / n,
        med(c SUBSEP "config_ms"), med(c SUBSEP "reduce_ms"), med(c SUBSEP "config_reduce_ms"),
        med(c SUBSEP "index_raw"), med(c SUBSEP "index_wire"), bad[c] ? "FAIL" : "ok"
    }
  }' "$log" >"$tmp/rows"

predict() { # link density degrees ratio compress -> "config_ms reduce_ms"
  local link=$1 dens=$2 deg=$3 ratio=$4 mode=$5 rph=2 local=(--local-link "$tmp/loop.json")
  [ "$link" = loopback ] && rph=4
  "$kylix" plan --features "$n" --density "$dens" --ranks 4 --degrees "$deg" --link "$tmp/$link.json" "${local[@]}" \
    --ranks-per-host "$rph" --cores-per-host "$((rph / 2))" --bytes-per-value 4 --in-equals-out --index-ratio "$ratio" \
    --compress "$mode" --rates-json "$tmp/rates.json" |
    awk '$1 == "given" || $1 == "planned" { printf "%.1f %.1f\n", 1e3 * $3, 1e3 * $4; exit }'
}

{
  echo "Kylix on loopback and shaped links: 4 ranks, n=$n, in = out, f32 SUM; $(nproc) cores;" \
    "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core netio capi || echo '+dirty')," \
    "$(($(date +%s) - start)) s, 1-min load average $load0 before / $(cut -d' ' -f1 /proc/loadavg) after"
  echo
  for l in $links; do if [ "$l" != loopback ] && [ -e "$tmp/$l.txt" ]; then echo "link $l (one rank per side): $(sed -n 2p "$tmp/$l.txt")"; fi; done
  echo "link between ranks of one host (4 loopback ranks): $(sed -n 2p "$tmp/loop.txt")"
  echo "compute rates (ns per element, one core): $(tr -d '\n ' <"$tmp/rates.json")"
  echo
  echo "Times in ms, median of $reps runs (each a median of its own iterations); index MB: config's index lists per config, all ranks, raw -> wire; model: kylix plan's prediction for the same degrees, link and index ratio."
  echo
  echo "| link | density | compress | degrees (used) | config | reduce | config_reduce | index MB raw -> wire (ratio) | model config | model reduce | model/measured config, reduce | check |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  while read -r _ link dens c gopt used dmeas cfg red cr raw wire chk; do
    ratio=$(awk -v r="$raw" -v w="$wire" 'BEGIN { printf "%.3g", (w > 0 ? r / w : 1) }')
    # auto compresses only between hosts, with the codec's ratio: lz4's on the same data
    codec=$ratio mode=lz4
    if [ "$c" = auto ]; then
      mode=auto
      codec=$(awk -v k="$link $dens lz4 $gopt" '$2 " " $3 " " $4 " " $5 == k { printf "%.3g", ($12 > 0 ? $11 / $12 : 1); exit }' "$tmp/rows")
      [ "$link" = loopback ] && codec=1
    fi
    first=${used%%/*}
    model=$(predict "$link" "$dmeas" "${first:-direct}" "${codec:-1}" "$mode" || echo "- -")
    read -r mc mr <<<"$model"
    awk -v link="$link" -v dens="$dens" -v c="$c" -v gopt="$gopt" -v used="$used" -v cfg="$cfg" -v red="$red" \
      -v cr="$cr" -v raw="$raw" -v wire="$wire" -v ratio="$ratio" -v mc="$mc" -v mr="$mr" -v chk="$chk" 'BEGIN {
      printf "| %s | %s | %s | %s (%s) | %.1f | %.1f | %.1f | %.1f -> %.1f (%s) | %s | %s | %s, %s | %s |\n",
        link, dens, c, gopt, used, cfg, red, cr, raw / 1e6, wire / 1e6, ratio, mc, mr,
        (mc > 0 ? sprintf("%.2f", mc / cfg) : "-"), (mr > 0 ? sprintf("%.2f", mr / red) : "-"), chk }'
  done <"$tmp/rows"
} | if [ -n "$outfile" ]; then tee "$outfile"; else cat; fi
! grep -q 'check=FAIL' "$log"
