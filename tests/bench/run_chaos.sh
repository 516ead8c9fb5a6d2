#!/usr/bin/env bash
# run_chaos.sh — the long chaos run: real elastic jobs (kylixrun --elastic, replication 1 and 2,
# on loopback with shared memory and across two network namespaces) under a seeded schedule of
# faults, every answer checked (tests/chaos). Not a test: `make test` runs the bounded version.
#
#   tests/bench/run_chaos.sh [DURATION [SEED]]      e.g. tests/bench/run_chaos.sh 10m 4242
#
# DURATION (default 10m) is the time faults are injected, over jobs of about two minutes each
# (their start and end add a little); SEED (default: drawn and printed) replays a run's fault
# schedule. CHAOS_LIVENESS and CHAOS_TIMEOUT (Go durations: 4s, 15s) set liveness_ms and
# timeout_ms of the jobs. Prints a progress line per fault skipped by a guard and, at the end,
# the table that README.md's "Chaos" section shows; exits non-zero when anything was wrong.
# Runs with nice -n 10; the namespace faults need root, ip and tc (without them those jobs run
# on loopback only). BUILD=dir uses a library built elsewhere (default build/, made first).
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-10m}
seed=${2:-0}
if [ -z "${BUILD:-}" ]; then
	make -s all >/dev/null
	BUILD=$PWD/build
fi
args=(-chaos.duration "$dur" -seed "$seed")
[ -n "${CHAOS_LIVENESS:-}" ] && args+=(-chaos.liveness "$CHAOS_LIVENESS")
[ -n "${CHAOS_TIMEOUT:-}" ] && args+=(-chaos.timeout "$CHAOS_TIMEOUT")
KYLIX_BUILD=$BUILD exec nice -n 10 go test -count=1 -v -timeout 2h -run '^TestChaos$' ./tests/chaos -args "${args[@]}"
