#!/bin/sh
# keys.sh DIR - throwaway keys for one test run: DIR/host_key (sshd's host key), DIR/id (the
# client key) and DIR/authorized_keys (id.pub).
set -eu
[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
d=$1
ssh-keygen -q -t ed25519 -N '' -C kylix-test-host -f "$d/host_key"
ssh-keygen -q -t ed25519 -N '' -C kylix-test-client -f "$d/id"
cp "$d/id.pub" "$d/authorized_keys"
chmod 600 "$d/authorized_keys"
