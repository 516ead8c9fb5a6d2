#!/bin/sh
# shape.sh NS DEV RATE - limit what leaves DEV in namespace NS to RATE (tc's units: 1gbit,
# 200mbit) with a token bucket filter (tbf; this kernel has no netem). RATE "off" removes it.
# Shape both ends of a veth pair for a symmetric link.
#
# The bucket is what passes at the veth's own speed, unshaped: it must be small, or every
# message below its size (all of a link probe's) crosses a "200 Mbit/s" link at memory speed.
# It must also hold the largest packet, or tbf drops that packet for good: so the veth's
# segments are capped at 16 KiB (gso_max_size; 64 KiB by default) and the bucket holds 32 KiB,
# 1.3 ms at 200 Mbit/s. Packets wait at most 50 ms in the queue.
set -eu
[ $# = 3 ] || { echo "usage: $0 NS DEV RATE|off" >&2; exit 2; }
ns=$1 dev=$2 rate=$3
if [ "$rate" = off ]; then
	tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
	ip -n "$ns" link set dev "$dev" gso_max_size 65536
	exit 0
fi
ip -n "$ns" link set dev "$dev" gso_max_size 16384
tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$rate" burst 32kb latency 50ms
