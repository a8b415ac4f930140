#!/bin/bash
# Conformance to the fi_* man pages on the points libfabric's fabtests check
# (tests/tools/gm-conform.c): event queues, getinfo's node/service and
# source address, AV errors, loopback, FI_INJECT completions, and acks
# still sent by a closing endpoint.  A veth pair inside a namespace of its
# own: IP_B on the B end, a permanent neighbour entry for it on the A end.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$top}
conform=${GM_TESTS_BUILDDIR:-$build/tests}/tools/gm-conform
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
[ -x "$conform" ] || { echo "FAIL: $conform not built"; exit 1; }
. "$top/tools/gamma-env.sh"

ns=gcf$$ a=gcf$$a b=gcf$$b ip_b=10.199.$(($$ % 250)).2
trap 'ip netns del "$ns" 2>/dev/null' EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$ns" || exit 1
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link add "$a" type veth peer name "$b" || exit 1
in_ns ip link set "$a" up && in_ns ip link set "$b" up && in_ns ip link set lo up || exit 1
in_ns ip addr add "$ip_b/24" dev "$b" || exit 1
mac_b=$(in_ns cat "/sys/class/net/$b/address")
in_ns ip neigh replace "$ip_b" lladdr "$mac_b" dev "$a" nud permanent || exit 1

# A peer timeout short enough that a lost final ack fails in seconds.
in_ns env FI_GAMMA_IFACE="$a,$b" FI_GAMMA_PEER_TIMEOUT=3000 timeout 120 "$conform" "$a" "$b" "$ip_b"
rc=$?
[ $rc -eq 0 ] || echo "FAIL: gm-conform exit $rc"
exit $rc
