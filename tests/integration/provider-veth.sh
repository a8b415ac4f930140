#!/bin/bash
# Provider "gamma" over a real veth pair: every message feature with every
# byte checked, clean and under netem faults; a killed peer yields FI_EIO.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$top}
fitest=$build/tests/tools/gm-fitest
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (CAP_NET_ADMIN for veth, CAP_NET_RAW for AF_PACKET)"; exit 77; }
. "$top/tools/gamma-env.sh"

a=gpv$$a b=gpv$$b
cleanup() { ip link del "$a" 2>/dev/null; true; }
trap cleanup EXIT
ip link add "$a" type veth peer name "$b" || exit 1
ip link set "$a" up && ip link set "$b" up
export FI_GAMMA_IFACE=$a,$b

run() { # run NAME ARGS... : the fitest under a timeout, output kept
	echo "== $1"
	shift
	timeout 300 "$fitest" "$@" || { echo "FAIL: gm-fitest $* (exit $?)"; exit 1; }
}

run "clean link" pair "$a" "$b"
for fault in "loss 5%" "delay 200us reorder 25% 50%" "duplicate 5%" "corrupt 1%"; do
	tc qdisc add dev "$a" root netem $fault
	tc qdisc add dev "$b" root netem $fault
	FI_GAMMA_STATS=1 run "netem $fault" pair "$a" "$b" $((4 << 20))
	tc qdisc del dev "$a" root
	tc qdisc del dev "$b" root
done
FI_GAMMA_PEER_TIMEOUT=2000 run "killed peer" kill "$a" "$b"
echo "all provider checks passed"
