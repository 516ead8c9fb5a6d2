#!/bin/sh
# sshd.sh NS ADDR DIR - run sshd in the foreground (its PID is this script's: it execs) inside
# network namespace NS, on ADDR port 22, with the keys of keys.sh DIR and nothing from
# /etc/ssh: root logs in with DIR/id only. Log to stderr. MaxStartups keeps sshd's default
# (10:30:100), as on a real host: kylixrun must not start more logins at once than that.
set -eu
[ $# = 3 ] || { echo "usage: $0 NS ADDR DIR" >&2; exit 2; }
ns=$1 addr=$2 d=$3
cat >"$d/sshd_config.$ns" <<CFG
ListenAddress $addr:22
HostKey $d/host_key
PidFile none
AuthorizedKeysFile $d/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
UseDNS no
LogLevel ERROR
CFG
mkdir -p /run/sshd # the privilege separation directory
exec ip netns exec "$ns" /usr/sbin/sshd -D -e -f "$d/sshd_config.$ns"
