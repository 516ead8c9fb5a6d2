#!/bin/sh
# deps.sh [mpi|ssh|pkg|all] - install what the launcher tests (tests/launchers_test.go) and
# tests/userpaths need, if missing:
#   mpi   Open MPI's mpirun         (Debian package openmpi-bin)
#   ssh   sshd, ssh, ssh-keygen, ip  (openssh-server, openssh-client, iproute2)
#   pkg   pkg-config                 (pkgconf)
#   all   all of them (the default)
# Does nothing when everything is there; otherwise needs root and apt-get. With DEPS_CHECK=1 it
# installs nothing and fails naming what is missing. The install starts
# no service: when the system has no /usr/sbin/policy-rc.d, a temporary one forbids it.
set -eu
what=${1:-all}
case $what in
mpi | ssh | pkg | all) ;;
*)
	echo "usage: $0 [mpi|ssh|pkg|all]" >&2
	exit 2
	;;
esac
pkgs=
need() { # need <command or absolute path> <package>
	command -v "$1" >/dev/null 2>&1 || [ -x "$1" ] || case " $pkgs " in
		*" $2 "*) ;;
		*) pkgs="$pkgs $2" ;;
		esac
}
# Open MPI's mpirun: Debian's mpirun.openmpi, or an mpirun that says it is Open MPI (not MPICH's).
if { [ "$what" = mpi ] || [ "$what" = all ]; } && ! command -v mpirun.openmpi >/dev/null 2>&1 &&
	! { mpirun --version 2>/dev/null | grep -q "Open MPI"; }; then
	pkgs="$pkgs openmpi-bin"
fi
if [ "$what" = pkg ] || [ "$what" = all ]; then
	need pkg-config pkgconf
fi
if [ "$what" = ssh ] || [ "$what" = all ]; then
	need /usr/sbin/sshd openssh-server
	need ssh openssh-client
	need ssh-keygen openssh-client
	need ip iproute2
fi
[ -z "$pkgs" ] && exit 0
if [ "${DEPS_CHECK:-}" = 1 ]; then # only say what is missing (the Go tests ask; make test installs)
	echo "missing packages:$pkgs" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: missing packages:$pkgs (installing them needs root and apt-get)" >&2
	exit 1
fi
policy=/usr/sbin/policy-rc.d
if [ ! -e $policy ]; then
	printf '#!/bin/sh\nexit 101\n' >$policy
	chmod 755 $policy
	trap 'rm -f $policy' EXIT
fi
echo "deps.sh: installing$pkgs" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt-get (unattended upgrades, a neighbour's install) may hold dpkg's lock: wait for it.
apt() { apt-get -o DPkg::Lock::Timeout=300 "$@"; }
# shellcheck disable=SC2086
apt install -y -qq --no-install-recommends $pkgs >/dev/null 2>&1 ||
	{ apt update -qq && apt install -y -qq --no-install-recommends $pkgs >/dev/null; }
