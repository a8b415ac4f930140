#!/bin/bash
# The double queue end to end with real provider traffic: on a --dq on
# cluster, every frame of a high-class gamma endpoint (tclass
# FI_TC_LOW_LATENCY) is counted in the high htb class 1:10 and every frame of
# a low-class one (FI_TC_BULK_DATA), and TCP, in the low class 1:20, in both
# directions; with --dq off all of it goes through the one FIFO class.  The
# traffic is tools/gamma-stream-node's (the stream program of
# tools/gamma-streams): every message verified byte by byte, none lost.
# shellcheck source=cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh" dp
NODEBIN=${GAMMA_BUILD_DIR:-$BUILT/..}/tools/gamma-stream-node
# shellcheck disable=SC2154 # top: set by cluster-lib.sh
[ -x "$NODEBIN" ] || NODEBIN=$top/tools/gamma-stream-node
[ -x "$NODEBIN" ] || fail "tools/gamma-stream-node not built"
GAMMA_BUILD_DIR=$(cd "$(dirname "$NODEBIN")/.." && pwd)
export GAMMA_BUILD_DIR
. "$top/tools/gamma-env.sh" 2>/dev/null
fi_info -p gamma -t FI_EP_RDM 2>/dev/null | grep -q 'provider: gamma' ||
	skip "libfabric lists no gamma FI_EP_RDM endpoint (provider not built?)"
N=200 # messages per stream

# Bad input gets a clear error, not a hang.
out=$(timeout 10 "$top/tools/gamma-streams" --nodes 1 2>&1) && fail "gamma-streams --nodes 1 succeeded"
grep -q 'invalid --nodes' <<<"$out" || fail "gamma-streams --nodes 1: unclear error: $out"
out=$(timeout 10 "$NODEBIN" gamma-send --node 0 --peers 1 --size 8 --count 1 --dir /tmp 2>&1) &&
	fail "gamma-stream-node --size 8 succeeded"
grep -q 'invalid --size' <<<"$out" || fail "gamma-stream-node --size 8: unclear error: $out"

# stream C CLASS: N 1 KiB messages from node 0 to node 1 over gamma; CLASS
# high is paced (each message acknowledged by a message back), low streams
# with 8 in flight.  Both sides must verify all N.
stream()
{
	local c=$1 cls=$2 d mode
	d=$(mktemp -d "$WORK/s.XXXX")
	mode=(--paced)
	[ "$cls" = low ] && mode=(--stream 8)
	local args=(--dir "$d" --name "s$cls" --size 1K --tclass "$cls" "${mode[@]}" --count "$N" --timeout 20)
	timeout 60 "$GC" exec "$c" 1 "$NODEBIN" gamma-recv --node 1 --peers 0 "${args[@]}" >"$d/recv" 2>&1 &
	local rp=$!
	BGPIDS="$BGPIDS $rp"
	timeout 60 "$GC" exec "$c" 0 "$NODEBIN" gamma-send --node 0 --peers 1 "${args[@]}" >"$d/send" 2>&1 ||
		fail "$cls gamma sender: $(cat "$d/send" "$d/recv")"
	wait $rp || fail "$cls gamma receiver: $(cat "$d/recv")"
	grep -q "^result role=gamma-send node=0 class=$cls sent=$N to1=$N\$" "$d/send" ||
		fail "$cls sender did not send $N: $(cat "$d/send")"
	grep -q "^result role=gamma-recv node=1 class=$cls received=$N bad=0 " "$d/recv" ||
		fail "$cls receiver did not verify $N: $(cat "$d/recv")"
}

tcp_stream()
{
	local c=$1 ip1
	ip1=$(awk '$1 == 1 {print $5}' "/run/gamma-cluster/$c/nodes")
	timeout 60 "$GC" exec "$c" 1 "$NODEBIN" tcp-recv --node 1 --port 5611 --count $N --timeout 20 \
		>"$WORK/tcp.recv" 2>&1 &
	local rp=$!
	BGPIDS="$BGPIDS $rp"
	timeout 60 "$GC" exec "$c" 0 "$NODEBIN" tcp-send --node 0 --addr "$ip1" --port 5611 --size 1K \
		--count $N --timeout 20 >"$WORK/tcp.send" 2>&1 || fail "tcp sender: $(cat "$WORK/tcp.send")"
	wait $rp || fail "tcp receiver: $(cat "$WORK/tcp.recv")"
	grep -q "^result role=tcp-recv node=1 port=5611 received=$N bad=0 " "$WORK/tcp.recv" ||
		fail "tcp receiver did not verify $N: $(cat "$WORK/tcp.recv")"
}

# Counters of both bands on the four link ends the traffic crosses: node 0's
# uplink and node 1's bridge port (data), node 1's uplink and node 0's bridge
# port (answers and acknowledgements).
ENDS="n0:gc-C-n0 p1:gc-C-p1 n1:gc-C-n1 p0:gc-C-p0"
snap()
{
	local c=$1 e dev ns
	for e in $ENDS; do
		dev=${e#*:}
		dev=${dev/C/$c}
		ns=
		[[ $dev = *-n[0-9]* ]] && ns=$dev
		echo "${e%%:*} $(class_pkts "$dev" 1:10 "$ns") $(class_pkts "$dev" 1:20 "$ns")"
	done
}
# delta BEFORE AFTER END: "high low" packets sent by that end in between.
delta()
{
	awk -v e="$3" 'NR == FNR && $1 == e { h = $2; l = $3 }
		NR != FNR && $1 == e { printf "%d %d\n", ($2 == "none" ? 0 : $2 - h), ($3 == "none" ? 0 : $3 - l) }' \
		<(echo "$1") <(echo "$2")
}

# --- dq on ----------------------------------------------------------------------
C=$NAME
up "$C" --nodes 2 --netns --dq on --rate 1gbit
# Inside the nodes nothing else talks (no IPv6, no IP yet): the node ends'
# deltas are ours alone.  The bridge ports also carry what the host's side of
# the bridge sends now and then (stray ARP/IGMP): a frame or two of low band.
STRAY=3
b=$(snap "$C")
stream "$C" high
a=$(snap "$C")
for e in n0 p1 n1 p0; do
	read -r h l <<<"$(delta "$b" "$a" $e)"
	max=0
	[[ $e = p* ]] && max=$STRAY
	[ "$h" -ge $N ] && [ "$l" -le $max ] ||
		fail "dq on, high-class stream, $e: high band $h packets (want >= $N), low band $l (want <= $max)"
done
ok "dq on: $N verified high-class messages and their answers all in the high band ($(delta "$b" "$a" n0) on n0)"

b=$a
stream "$C" low
a=$(snap "$C")
for e in n0 p1; do
	read -r h l <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge $N ] ||
		fail "dq on, low-class stream, $e: high band $h packets (want 0), low band $l (want >= $N)"
done
for e in n1 p0; do
	read -r h l <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge 1 ] ||
		fail "dq on, low-class acknowledgements, $e: high band $h (want 0), low band $l (want >= 1)"
done
ok "dq on: $N verified low-class messages and their acknowledgements all in the low band ($(delta "$b" "$a" n0) on n0)"

b=$a
tcp_stream "$C"
a=$(snap "$C")
for e in n0 p1 n1 p0; do
	read -r h l <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge 1 ] || fail "dq on, TCP, $e: high band $h (want 0), low band $l (want >= 1)"
done
read -r h l <<<"$(delta "$b" "$a" n0)"
# 200 KiB in at most 64 KiB segments: at least 4 packets from node 0.
[ "$l" -ge 4 ] || fail "dq on, TCP: only $l packets in node 0's low band"
ok "dq on: TCP ($N verified messages) all in the low band ($h $l on n0)"
timeout 30 "$GC" down "$C" >/dev/null || fail "down"

# --- dq off: one FIFO ---------------------------------------------------------------
up "$C" --nodes 2 --netns --dq off --rate 1gbit
b=$(snap "$C")
stream "$C" high
stream "$C" low
a=$(snap "$C")
for e in n0 p1; do
	read -r h l <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge $((2 * N)) ] ||
		fail "dq off, $e: FIFO sent $l packets (want >= $((2 * N))), high band $h (want none)"
done
for d in "gc-$C-p0" "gc-$C-p1"; do
	[ "$(class_pkts "$d" 1:10)" = none ] || fail "$d: dq off but a high band exists"
	tc filter show dev "$d" | grep -q u32 && fail "$d: dq off but a u32 filter exists"
done
ok "dq off: both classes' $((2 * N)) verified messages through the one FIFO ($(delta "$b" "$a" n0) on n0)"
