#!/usr/bin/env bash
# What `make test` runs once `make all examples` has built everything:
#
#   1. says what is missing and installs it (tests/deps.sh): apt packages as root, and which
#      virtualenvs the suites will fill on their first run;
#   2. runs three lanes at once, since most of the run waits on timeouts, sleeps and child
#      processes rather than on the 2 cores (make test used about half of one core before):
#        Go:        go test ./... (live, through tests/testsum: each package's counts as it ends,
#                   and what still runs during a long one), the lock-free packages under the
#                   race detector, then the short fuzz runs;
#        userpaths: tests/userpaths, the longest suite;
#        bindings:  go vet, the Python binding tests, the Java binding tests;
#      the suites of the last two write build/test-results/<suite>.log, are announced when they
#      start and counted when they end, and their whole log is printed when they fail; while
#      they run, `testsum progress` relays what they report (tests/progress): each download
#      with its size and time, each test that fails or takes 5 s or more as it ends, and
#      after 30 s without a line, which test runs now and how many are done;
#   3. ends with each suite's counts and one plain `N passed, N failed, N skipped` line, and
#      fails when any suite failed.
#
#   KYLIX_BUILD=/abs/build GO=go bash tests/make_test.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$(cd "${KYLIX_BUILD:-$ROOT/build}" && pwd)"
GO="${GO:-go}"
RES="$BUILD/test-results"
export KYLIX_BUILD="$BUILD"
cd "$ROOT"
rm -rf "$RES"
mkdir -p "$RES"
t0=$(date +%s)
secs() { echo $(( $(date +%s) - $1 )); }

bash tests/deps.sh || exit 1

"$GO" build -o "$BUILD/testsum" ./tests/testsum || exit 1
testsum() { "$BUILD/testsum" "$@"; }

# One suite of the other lane: its output to a log, one line when it starts and one when it
# ends, and in between what it reports on $TESTSUM_PROGRESS (tests/progress/progress.sh, the
# pytest plugin beside it, the JUnit extension of bindings/java), relayed by `testsum progress`
# so that the suite is never silent for more than 30 s. A suite that leaves no JUnit report gets
# a counts file from its exit status alone.
suite() { # suite <name> <command...>
  local name=$1 s rc follower
  shift
  s=$(date +%s)
  echo "== $name: started ($*)"
  echo "step $s $*" >"$RES/progress.$name"   # until the suite says what it does
  testsum progress -name "$name" -file "$RES/progress.$name" -every 30s -slow 5s &
  follower=$!
  TESTSUM_PROGRESS="$RES/progress.$name" "$@" >"$RES/$name.log" 2>&1
  rc=$?
  echo "end $(date +%s)" >>"$RES/progress.$name"
  wait "$follower"
  if [ "$rc" = 0 ]; then
    echo "== $name: finished in $(secs "$s") s"
  else
    echo "== $name: FAILED after $(secs "$s") s; its output:"
    cat "$RES/$name.log"
    echo "== end of $name's output"
    touch "$RES/failed.$name"
  fi
}

bindings_lane() {
  suite vet "$GO" vet ./...
  [ -e "$RES/failed.vet" ] && echo "vet 0 1 0" >"$RES/vet.counts" || echo "vet 1 0 0" >"$RES/vet.counts"
  suite python bash bindings/python/run_tests.sh --junitxml="$RES/python.xml"
  rm -rf bindings/java/target/surefire-reports # so an earlier run's reports cannot count
  suite java bash bindings/java/run_tests.sh
}

suite userpaths bash tests/userpaths/run.sh --junitxml="$RES/userpaths.xml" &
userpaths=$!
bindings_lane &
bindings=$!

go_ok=1
"$GO" test -json -count=1 -timeout 20m $("$GO" list ./... | grep -v '/tests/chaos$') | testsum go -counts "$RES/go.counts" || go_ok=0
# The bounded chaos run (tests/chaos) on its own, since its faults are timed against liveness_ms.
echo "== chaos (two elastic jobs under seeded faults, about a minute)"
"$GO" test -json -count=1 -timeout 10m ./tests/chaos | testsum go -name chaos -counts "$RES/chaos.counts" || go_ok=0
# Budgets are counts of executions (about 10 s each here), not durations: Go 1.26's fuzzing
# coordinator can fail a duration-bounded run with "context deadline exceeded" at the deadline
# under load (golang/go#75804, fixed in Go 1.27), with nothing found.
# The packages whose hot paths take no lock (the mailbox's looks and hand-overs, the ring, the
# recorder's own counts, relaxed stores) once more under the race detector, about 15 s. The
# whole of netio under it (`go test -race ./netio/...`, two minutes) is run by hand.
echo "== race (netio/mailbox, netio/shm, core/stats, core/kx under the race detector)"
"$GO" test -race -json -count=1 -timeout 10m ./netio/mailbox ./netio/shm ./core/stats ./core/kx |
  testsum go -name race -counts "$RES/race.counts" || go_ok=0
# Every target's corpus (testdata/fuzz and its seeds) already ran in go test above; the long
# runs are tests/bench/run_fuzz.sh.
for f in "FuzzDecodeHeader ./netio 400000" "FuzzDecodeAbort ./netio 100000" \
  "FuzzDecodeHello ./netio/mesh 100000" "FuzzHandshake ./netio/mesh 60000" "FuzzDecodeShmHello ./netio/mesh 100000" \
  "FuzzDecodeIndexList ./core/keyset 400000" "FuzzLayer0Msg ./core/keyset 400000" \
  "FuzzConfigMsg ./core/keyset 150000" "FuzzReadMsg ./netio/rendezvous 60000" \
  "FuzzServe ./netio/rendezvous 60000" "FuzzRingReader ./netio/shm 60000" "FuzzRsum ./core/rsum 150000"; do
  set -- $f
  echo "== fuzz $1 ($3 runs)"
  "$GO" test -json -run '^$' -fuzz "^$1\$" -fuzztime "$3x" -fuzzminimizetime 100x "$2" |
    testsum go -name fuzz -counts "$RES/fuzz-$1.counts" || go_ok=0
done

wait "$userpaths" "$bindings"

echo "== make test: $(secs "$t0") s"
# Surefire writes one report per test class; a suite that failed before its report counts as
# failed (testsum total counts a missing report as one failure).
testsum total "$RES/go.counts" "$RES/chaos.counts" "$RES/race.counts" "$RES"/fuzz-*.counts "$RES/vet.counts" \
  "python=$RES/python.xml" "java=bindings/java/target/surefire-reports/TEST-*.xml" \
  "userpaths=$RES/userpaths.xml"
total_ok=$?
[ "$go_ok" = 1 ] && [ "$total_ok" = 0 ] && ! ls "$RES"/failed.* >/dev/null 2>&1
