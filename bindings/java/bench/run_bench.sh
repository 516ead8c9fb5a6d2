#!/bin/sh
# Per-call time of a 1M-value f32 reduce (and of a 1-value one) from C and from Java, in the same
# run, alternating C and Java jobs so both see the same machine state. Builds the C baseline with
# gcc against build/libkylix.so and the Java side against target/classes (mvn compile).
#
#   bindings/java/bench/run_bench.sh [ranks=2] [rounds=3] [N=1048576] [calls=30]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
java_dir=$(cd "$here/.." && pwd)
build=$(cd "${KYLIX_BUILD:-$java_dir/../../build}" && pwd)
ranks=${1:-2}
rounds=${2:-3}
n=${3:-1048576}
calls=${4:-30}
out=$java_dir/target/bench
mkdir -p "$out"

gcc -O2 -Wall -I"$build/include" -o "$out/reduce_bench" "$here/reduce_bench.c" \
  -L"$build" -lkylix -Wl,-rpath,"$build"
(cd "$java_dir" && mvn -q -B -Dstyle.color=never compile dependency:build-classpath \
  -Dmdep.includeScope=runtime -Dmdep.outputFile=target/runtime-classpath.txt >/dev/null)
cp="$java_dir/target/classes:$(cat "$java_dir/target/runtime-classpath.txt")"
javac -cp "$cp" -d "$out" "$here/ReduceBench.java"

results=$out/results.txt
: > "$results"
r=1
while [ "$r" -le "$rounds" ]; do
  "$build/kylixrun" -n "$ranks" -- "$out/reduce_bench" "$n" "$calls" | tee -a "$results"
  "$build/kylixrun" -n "$ranks" -- java -XX:+UseSerialGC -Dkylix.library.path="$build" \
    -cp "$cp:$out" ReduceBench "$n" "$calls" | tee -a "$results"
  r=$((r + 1))
done

echo
echo "microseconds per call over $rounds rounds: median of the per-round medians, and the smallest"
echo "minimum (less sensitive to other load on the machine); overhead = Java - C ($ranks ranks, N=$n):"
awk '
  { for (i = 1; i <= NF; i++) if ($i == "median_us") {
      key = $1; size = $2; for (j = 2; j < i; j++) key = key " " $j
      if (!(key in cnt)) { order[++nk] = key; sz[key] = size }
      vals[key, ++cnt[key]] = $(i + 1)
      if (!(key in mn) || $(i + 3) < mn[key]) mn[key] = $(i + 3)
    } }
  END {
    for (k = 1; k <= nk; k++) {
      key = order[k]; n = cnt[key]
      for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++)
        if (vals[key, b] < vals[key, a]) { t = vals[key, a]; vals[key, a] = vals[key, b]; vals[key, b] = t }
      med[key] = vals[key, int((n + 1) / 2)]
    }
    for (k = 1; k <= nk; k++) {
      key = order[k]; c = "C " sz[key]
      if (key ~ /^Java/ && (c in med))
        printf "  %-30s median %9.2f (%+9.2f, %+6.1f%%)   min %9.2f (%+9.2f, %+6.1f%%)\n", key,
          med[key], med[key] - med[c], 100 * (med[key] - med[c]) / med[c],
          mn[key], mn[key] - mn[c], 100 * (mn[key] - mn[c]) / mn[c]
      else
        printf "  %-30s median %9.2f              min %9.2f\n", key, med[key], mn[key]
    }
  }' "$results"
