#!/bin/sh
# job.sh NS_A NS_B N LIMIT_S PROG [ARGS...] - run an N-rank Kylix job across two network
# namespaces made by up.sh: ranks 0..N/2-1 in NS_A (10.201.0.1), the rest in NS_B (10.201.0.2),
# as two hosts of N/2 ranks each. The ranks find each other through a static peers table
# (ports 7100+rank) with a fresh secret; KYLIX_* variables of the caller pass through. Like
# kylixrun, each rank gets GOMAXPROCS and threads of cores/N (at least 1) unless set. Every
# rank is stopped after LIMIT_S seconds; the exit code is the first failing rank's, else 0.
set -u
[ $# -ge 5 ] || { echo "usage: $0 NS_A NS_B N LIMIT_S PROG [ARGS...]" >&2; exit 2; }
nsa=$1 nsb=$2 n=$3 limit=$4
shift 4
half=$((n / 2))
[ "$half" -ge 1 ] && [ $((half * 2)) = "$n" ] || { echo "job.sh: N must be even and at least 2" >&2; exit 2; }
peers=
r=0
while [ $r -lt "$n" ]; do
	ip=10.201.0.1
	[ $r -ge "$half" ] && ip=10.201.0.2
	peers=$peers${peers:+,}$ip:$((7100 + r))
	r=$((r + 1))
done
share=$(($(nproc) / n))
[ "$share" -ge 1 ] || share=1
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done' EXIT INT TERM
r=0
while [ $r -lt "$n" ]; do
	ns=$nsa
	[ $r -ge "$half" ] && ns=$nsb
	timeout -k 5 "$limit" ip netns exec "$ns" env KYLIX_RANK=$r KYLIX_SIZE="$n" KYLIX_PEERS="$peers" \
		KYLIX_SECRET="$secret" GOMAXPROCS="${GOMAXPROCS:-$share}" KYLIX_THREADS="${KYLIX_THREADS:-$share}" "$@" &
	pids="$pids $!"
	r=$((r + 1))
done
code=0
for p in $pids; do
	wait "$p" || { c=$?; [ $code = 0 ] && code=$c; }
done
pids=
exit $code
