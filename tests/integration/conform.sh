#!/bin/bash
# Conformance to the fi_* man pages on the points libfabric's fabtests check
# (tests/tools/gm-conform.c, gm-conform-sock.c): event queues, getinfo's
# node/service and source address, AV errors, loopback, FI_INJECT
# completions, acks still sent by a closing endpoint, and IPv4 socket
# addresses (FI_SOCKADDR).  A veth pair inside a namespace of its own: IP_A
# and IP_B on the two ends, a permanent neighbour entry for IP_B on the A
# end, none for IP_C (gm-conform adds it when it checks late resolution).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$top}
conform=${GM_TESTS_BUILDDIR:-$build/tests}/tools/gm-conform
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
[ -x "$conform" ] || { echo "FAIL: $conform not built"; exit 1; }
. "$top/tools/gamma-env.sh"

net=10.199.$(($$ % 250))
ns=gcf$$ a=gcf$$a b=gcf$$b ip_a=$net.1 ip_b=$net.2 ip_c=$net.77
trap 'ip netns del "$ns" 2>/dev/null' EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$ns" || exit 1
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link add "$a" type veth peer name "$b" || exit 1
in_ns ip link set "$a" up && in_ns ip link set "$b" up && in_ns ip link set lo up || exit 1
in_ns ip addr add "$ip_b/24" dev "$b" && in_ns ip addr add "$ip_a/24" dev "$a" || exit 1
mac_b=$(in_ns cat "/sys/class/net/$b/address")
in_ns ip neigh replace "$ip_b" lladdr "$mac_b" dev "$a" nud permanent || exit 1

# A peer timeout short enough that a lost final ack fails in seconds.
in_ns env FI_GAMMA_IFACE="$a,$b" FI_GAMMA_PEER_TIMEOUT=3000 timeout 120 "$conform" "$a" "$b" "$ip_b" "$ip_a" "$ip_c"
rc=$?
[ $rc -eq 0 ] || echo "FAIL: gm-conform exit $rc"
exit $rc
