#!/bin/sh
# down.sh NS... - delete network namespaces (and with them the veth ends inside). Deleting
# one that does not exist is not an error: this runs on every cleanup path.
for ns in "$@"; do
	if ip netns list | grep -q "^$ns\( \|$\)"; then
		ip netns del "$ns" || echo "down.sh: cannot delete namespace $ns" >&2
	fi
done
exit 0
