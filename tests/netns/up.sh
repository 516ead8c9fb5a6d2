#!/bin/sh
# up.sh NS_A NS_B VETH - two network namespaces joined by a veth pair VETH-a/VETH-b:
# NS_A has 10.201.0.1/24, NS_B 10.201.0.2/24, both with loopback up. Undo with down.sh.
# VETH must be at most 13 characters (interface names are at most 15).
set -eu
[ $# = 3 ] || { echo "usage: $0 NS_A NS_B VETH" >&2; exit 2; }
a=$1 b=$2 v=$3
ip netns add "$a"
ip netns add "$b"
ip link add "$v-a" type veth peer name "$v-b"
ip link set "$v-a" netns "$a"
ip link set "$v-b" netns "$b"
ip -n "$a" addr add 10.201.0.1/24 dev "$v-a"
ip -n "$b" addr add 10.201.0.2/24 dev "$v-b"
for ns in "$a" "$b"; do
	ip -n "$ns" link set lo up
done
ip -n "$a" link set "$v-a" up
ip -n "$b" link set "$v-b" up
