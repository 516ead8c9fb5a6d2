#!/usr/bin/env bash
# slowlink.sh - one rank of a local job behind a slow link, for the packet-racing benchmark
# (run_replication.sh). Needs bash, root, ip and tc (tbf; this kernel has no netem, so the link is
# slow by rate, not by delay).
#
#   slowlink.sh up NS VETH          namespace NS joined to this one by veth VETH-a/VETH-b:
#                                   here 10.213.0.1/24, in NS 10.213.0.2/24
#   slowlink.sh shape NS VETH RATE  a token bucket of RATE (tc units: 1gbit, 500mbit) on both
#                                   ends; RATE "off" removes it
#   slowlink.sh down NS VETH        delete NS (and with it the veth pair); quiet when missing
#   slowlink.sh launch NS SLOW N S PROGRAM ARGS...
#                                   run N ranks of PROGRAM with replication S, rank SLOW inside
#                                   NS, the others here; they find each other through a static
#                                   peers table (kylix_init's peers=) on these two addresses,
#                                   since a rank in NS cannot reach kylixrun's rendezvous on
#                                   127.0.0.1. Each rank is bounded by `timeout 300`; the first
#                                   rank to fail stops the others, and its status is the exit
#                                   status.
# VETH is at most 13 characters (interface names are at most 15).
set -eu
cmd=${1:-}
case $cmd in
up)
	ns=$2 v=$3
	ip netns add "$ns"
	ip link add "$v-a" type veth peer name "$v-b"
	ip link set "$v-b" netns "$ns"
	ip addr add 10.213.0.1/24 dev "$v-a"
	ip link set "$v-a" up
	ip -n "$ns" addr add 10.213.0.2/24 dev "$v-b"
	ip -n "$ns" link set "$v-b" up
	ip -n "$ns" link set lo up
	;;
shape)
	ns=$2 v=$3 rate=$4
	tc qdisc del dev "$v-a" root 2>/dev/null || true
	ip netns exec "$ns" tc qdisc del dev "$v-b" root 2>/dev/null || true
	if [ "$rate" != off ]; then
		# burst: a few 64 KiB GSO segments; latency bounds the queue (packets beyond it drop,
		# and TCP backs off, as on a real slow link).
		tc qdisc add dev "$v-a" root tbf rate "$rate" burst 256kb latency 20ms
		ip netns exec "$ns" tc qdisc add dev "$v-b" root tbf rate "$rate" burst 256kb latency 20ms
	fi
	;;
down)
	ns=$2 v=$3
	ip link del "$v-a" 2>/dev/null || true
	if ip netns list | grep -q "^$ns\( \|$\)"; then ip netns del "$ns"; fi
	;;
launch)
	ns=$2 slow=$3 n=$4 s=$5
	shift 5
	# Ports: a random block below the kernel's ephemeral range, where no connection's local
	# port can take them.
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
	span=$((low - 20000 - n))
	[ "$span" -gt 100 ] || { echo "slowlink.sh: ephemeral ports start at $low: no room" >&2; exit 1; }
	base=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % span))
	peers= r=0
	while [ $r -lt "$n" ]; do
		h=10.213.0.1
		[ $r = "$slow" ] && h=10.213.0.2
		peers="$peers${peers:+,}$h:$((base + r))"
		r=$((r + 1))
	done
	secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	pids=() r=0
	while [ $r -lt "$n" ]; do
		pre=()
		[ $r = "$slow" ] && pre=(ip netns exec "$ns")
		env -u KYLIX_RENDEZVOUS KYLIX_RANK=$r KYLIX_SIZE="$n" KYLIX_REPLICATION="$s" \
			KYLIX_PEERS="$peers" KYLIX_SECRET="$secret" KYLIX_TIMEOUT_MS=60000 \
			timeout 300 "${pre[@]}" "$@" &
		pids+=($!)
		r=$((r + 1))
	done
	# Like kylixrun: the first rank that fails stops the others (these PIDs, started here).
	rc=0
	while [ ${#pids[@]} -gt 0 ]; do
		st=0 fin=
		wait -n -p fin "${pids[@]}" || st=$?
		left=()
		for p in "${pids[@]}"; do [ "$p" = "$fin" ] || left+=("$p"); done
		pids=("${left[@]}")
		if [ $st != 0 ] && [ $rc = 0 ]; then
			rc=$st
			kill "${pids[@]}" 2>/dev/null || true
		fi
	done
	exit $rc
	;;
*)
	sed -n '2,22p' "$0" >&2
	exit 2
	;;
esac
