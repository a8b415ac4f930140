#!/bin/bash
# Conformance to the fi_* man pages on the points libfabric's fabtests check
# (tests/tools/gm-conform.c, gm-conform-sock.c): event queues, getinfo's
# node/service and source address, AV errors, loopback, FI_INJECT
# completions, acks still sent by a closing endpoint, and IPv4 socket
# addresses (FI_SOCKADDR, FI_SOCKADDR_IN6).  A veth pair inside a namespace
# of its own: IPv4 and IPv6 addresses on the two ends, permanent neighbour
# entries for B's on the A end, none for the C addresses (gm-conform adds
# them when it checks late resolution).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$top}
conform=${GM_TESTS_BUILDDIR:-$build/tests}/tools/gm-conform
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (namespace, veth, AF_PACKET)"; exit 77; }
[ -x "$conform" ] || { echo "FAIL: $conform not built"; exit 1; }
. "$top/tools/gamma-env.sh"

net=10.199.$(($$ % 250)) net6=fd67:6d:$(printf %x $(($$ % 65536)))::
ns=gcf$$ a=gcf$$a b=gcf$$b ip_a=$net.1 ip_b=$net.2 ip_c=$net.77
ip6_a=${net6}1 ip6_b=${net6}2 ip6_c=${net6}77
trap 'ip netns del "$ns" 2>/dev/null' EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$ns" || exit 1
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link add "$a" type veth peer name "$b" || exit 1
in_ns ip link set "$a" up && in_ns ip link set "$b" up && in_ns ip link set lo up || exit 1
in_ns ip addr add "$ip_b/24" dev "$b" && in_ns ip addr add "$ip_a/24" dev "$a" || exit 1
# nodad: usable at once, no waiting for duplicate address detection
in_ns ip addr add "$ip6_b/64" dev "$b" nodad && in_ns ip addr add "$ip6_a/64" dev "$a" nodad ||
	exit 1
mac_b=$(in_ns cat "/sys/class/net/$b/address")
in_ns ip neigh replace "$ip_b" lladdr "$mac_b" dev "$a" nud permanent || exit 1
in_ns ip -6 neigh replace "$ip6_b" lladdr "$mac_b" dev "$a" nud permanent || exit 1

# A peer timeout short enough that a lost final ack fails in seconds.
in_ns env FI_GAMMA_IFACE="$a,$b" FI_GAMMA_PEER_TIMEOUT=3000 timeout 120 "$conform" "$a" "$b" \
	"$ip_a" "$ip_b" "$ip_c" "$ip6_a" "$ip6_b" "$ip6_c"
rc=$?
[ $rc -eq 0 ] || echo "FAIL: gm-conform exit $rc"
exit $rc
