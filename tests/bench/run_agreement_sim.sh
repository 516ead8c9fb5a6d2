#!/usr/bin/env bash
# run_agreement_sim.sh — the membership agreement (kylix_resize, kylix_shrink) under simulated
# faults: every member runs the real agreement code over a simulated network whose seeded
# schedule kills, stops, splits, delays and reorders at every message, with joiners arriving at
# various points (core/members/agreesim_test.go). Not a test: `make test` runs a bounded set of
# schedules; this runs many and prints the figure:
#   schedules, disagreements, hangs, other failed checks; faults injected by kind; outcomes.
#
#   tests/bench/run_agreement_sim.sh [--schedules=100000] [--first=1]
#
# A failed schedule prints its seed and schedule; replay it with
#   go test ./core/members -run TestAgreementSimReplay -sim.seed=SEED -v
set -euo pipefail
cd "$(dirname "$0")/../.."
schedules=100000 first=1
for a in "$@"; do
  case $a in
  --schedules=*) schedules=${a#*=} ;;
  --first=*) first=${a#*=} ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
  esac
done
exec nice -n 10 "${GO:-go}" test ./core/members -count=1 -run 'TestAgreementSim$' -timeout 60m -v \
  -sim.schedules="$schedules" -sim.first="$first"
