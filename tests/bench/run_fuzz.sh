#!/usr/bin/env bash
# Fuzzes every decoder a peer or a stranger can reach with Go's native fuzzer, each for at least
# EXECS executions (default 1000000), one target after the other, and prints a table: decoder,
# target, executions, crashes. A crash leaves its input in the package's testdata/fuzz/<target>/
# (plain `go test`, hence `make test`, runs it from then on) and its log in build/bench/fuzz/.
#
#   nice -n 10 bash tests/bench/run_fuzz.sh [EXECS]
#
# Budgets are counts of executions, not durations (Go 1.26's fuzzing coordinator can fail a
# duration-bounded run at the deadline under load: golang/go#75804). Not part of `make test`,
# which runs each target's corpus and a short run (tests/make_test.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
GO="${GO:-go}"
execs=${1:-1000000}
logs=build/bench/fuzz
mkdir -p "$logs"
targets=(
  "frame header|FuzzDecodeHeader|./netio"
  "abort frame with blame|FuzzDecodeAbort|./netio"
  "hello|FuzzDecodeHello|./netio/mesh"
  "handshake (hello and proofs)|FuzzHandshake|./netio/mesh"
  "shared-memory hello|FuzzDecodeShmHello|./netio/mesh"
  "index list|FuzzDecodeIndexList|./core/keyset"
  "layer-0 message (set order)|FuzzLayer0Msg|./core/keyset"
  "config message|FuzzConfigMsg|./core/keyset"
  "rendezvous, join, cause message|FuzzReadMsg|./netio/rendezvous"
  "rendezvous server exchange|FuzzServe|./netio/rendezvous"
  "shared-memory ring (a peer writing garbage)|FuzzRingReader|./netio/shm"
)
rows=()
failed=0
for t in "${targets[@]}"; do
  IFS='|' read -r what name pkg <<<"$t"
  log="$logs/$name.log"
  s=$(date +%s)
  if "$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "${execs}x" -fuzzminimizetime 1000x "$pkg" >"$log" 2>&1; then
    crashes=0
  else
    crashes=1 # the fuzzer stops at its first crash
    failed=1
  fi
  n=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  echo "$name: ${n:-?} executions, $crashes crashes, $(( $(date +%s) - s )) s (log: $log)" >&2
  [ "$crashes" = 0 ] || grep -A3 -- '--- FAIL' "$log" | head -20 >&2
  rows+=("| $what | \`$name\` | ${n:-?} | $crashes |")
done
echo "| decoder | fuzz target | executions | crashes |"
echo "|---|---|---:|---:|"
printf '%s\n' "${rows[@]}"
exit "$failed"
