#!/bin/bash
# Provider "gamma" over real veth links: every message feature with every
# byte checked, on a clean link and under faults; a killed peer yields FI_EIO,
# also when nothing was in flight to it.
#
# Faults: this machine's kernel has no sch_netem, so instead of
# `tc qdisc ... netem` the faulty runs go through gm-faultwire
# (faultwire-lib.sh): a userspace relay between two veth pairs that loses,
# reorders, duplicates, corrupts, delays or blacks out real Ethernet frames
# of gamma's EtherType.  The frames still cross real veths, both ways.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$top}
fitest=$build/tests/tools/gm-fitest
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (CAP_NET_ADMIN for veth, CAP_NET_RAW for AF_PACKET)"; exit 77; }
. "$top/tools/gamma-env.sh"
FW_BIN=$build/experiments/faults/gm-faultwire
. "$top/tests/integration/faultwire-lib.sh"

a=gpv$$a b=gpv$$b
cleanup()
{
	ip link del "$a" 2>/dev/null
	if [ -n "$FW_PID" ]; then # a faulty run failed: show what the wire did
		fw_down
		echo "$FW_COUNTERS"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
ip link add "$a" type veth peer name "$b" || exit 1
ip link set "$a" up && ip link set "$b" up
export FI_GAMMA_IFACE=$a,$b

run() { # run NAME ARGS... : the fitest under a timeout, output kept
	echo "== $1"
	shift
	timeout 300 "$fitest" "$@" || { echo "FAIL: gm-fitest $* (exit $?)"; exit 1; }
}

run "clean link" pair "$a" "$b"

# fault NAME COUNTER FAULTWIRE-OPTIONS...: 4 MiB of every message feature
# through the faulty wire; COUNTER is the relay counter that proves the fault
# really hit this run's frames.
fault()
{
	local name=$1 counter=$2 n1 n2
	shift 2
	fw_up pv "$@" || { echo "FAIL: fw_up $*"; exit 1; }
	FI_GAMMA_IFACE=$FW_A,$FW_B FI_GAMMA_STATS=1 run "faultwire $name ($*)" pair "$FW_A" "$FW_B" $((4 << 20))
	fw_down
	echo "$FW_COUNTERS"
	n1=$(fw_counter 1to2 "$counter") n2=$(fw_counter 2to1 "$counter")
	[ $((n1 + n2)) -gt 0 ] || { echo "FAIL: $name: the wire never applied the fault ($counter = 0)"; exit 1; }
}
fault "loss 5%" lost --loss 5
fault "reorder 25% with delay" reordered --reorder 25 --delay 200
fault "duplicate 5%" duplicated --duplicate 5
fault "corrupt 1%" corrupted --corrupt 1
fault "delay 1 ms, jitter 0.5 ms" delayed --delay 1000 --jitter 500
# Counted from the wire's first gamma frame; shorter than the peer timeout.
fault "link down 2 s mid-run" down --down-after 100 --down-for 2000

FI_GAMMA_PEER_TIMEOUT=2000 run "killed peer" kill "$a" "$b"
# Killed while we only wait on it: keepalive probes must find it dead.
out=$(FI_GAMMA_PEER_TIMEOUT=2000 FI_GAMMA_STATS=1 run "killed idle peer" idle-kill "$a" "$b" 2>&1) ||
	{ echo "$out"; exit 1; }
echo "$out"
grep -q "gamma stats $a:.*probes [1-9][0-9]*;.* peers failed 1;" <<<"$out" ||
	{ echo "FAIL: the idle peer was not found dead by keepalive probes"; exit 1; }
# Unexpected messages beyond the per-peer cap wait, none is lost: their
# frames are refused and held back, memory stays within the cap and one
# message (a medium message's buffer grows past it by at most its size).
out=$(FI_GAMMA_UX_PEER_MAX=200000 FI_GAMMA_STATS=1 run "unexpected-message cap" ux-cap "$a" "$b" 2>&1) ||
	{ echo "$out"; exit 1; }
echo "$out"
held=$(sed -n "s/^gamma msg stats $b port [0-9]*:.*unexpected frames refused \([1-9][0-9]*\) (peak \([0-9]*\) B).*/\1 \2/p" <<<"$out")
[ -n "$held" ] && [ "${held#* }" -le $((200000 + 60000 + 1024)) ] ||
	{ echo "FAIL: $b: frames refused at the cap and a peak within 261024 B expected ($held)"; exit 1; }
# A burst of sends with no progress call between them leaves in a few
# system calls, not one per send (gm_net_kick); the progress thread kept
# out of it (an app idle 10 ms would let it flush in between), which also
# checks that closing a domain does not wait out the thread's long nap.
out=$(FI_GAMMA_PROGRESS_IDLE=600000000 FI_GAMMA_STATS=1 run "burst of sends" burst "$a" "$b" 2>&1) ||
	{ echo "$out"; exit 1; }
echo "$out"
calls=$(sed -n "s/^gamma stats $a:.*; tx calls \([0-9]*\);.*/\1/p" <<<"$out")
[ -n "$calls" ] && [ "$calls" -le 32 ] ||
	{ echo "FAIL: $a: 256 sends in a burst took ${calls:-?} tx calls (at most 32 expected)"; exit 1; }
echo "all provider checks passed"
