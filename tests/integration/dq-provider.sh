#!/bin/bash
# The double queue end to end with real provider traffic: on a --dq on
# cluster, every frame of a high-class gamma endpoint (tclass
# FI_TC_LOW_LATENCY) is counted in the high htb class 1:10 and every frame of
# a low-class one (FI_TC_BULK_DATA), and TCP, in the low class 1:20, in both
# directions (standalone acknowledgements excepted: the provider sends them
# high whatever the class); with --dq off all of it goes through the one FIFO.  The
# traffic is experiments/dq/streams/gamma-stream-node's (the stream program of
# experiments/dq/gamma-streams): every message verified byte by byte, none lost.
# shellcheck source=cluster-lib.sh
. "$(dirname "$0")/cluster-lib.sh" dp
NODEBIN=${GAMMA_BUILD_DIR:-$BUILT/..}/experiments/dq/streams/gamma-stream-node
# shellcheck disable=SC2154 # top: set by cluster-lib.sh
[ -x "$NODEBIN" ] || NODEBIN=$top/experiments/dq/streams/gamma-stream-node
[ -x "$NODEBIN" ] || fail "experiments/dq/streams/gamma-stream-node not built"
GAMMA_BUILD_DIR=$(cd "$(dirname "$NODEBIN")/../../.." && pwd)
export GAMMA_BUILD_DIR
. "$top/tools/gamma-env.sh" 2>/dev/null
fi_info -p gamma -t FI_EP_RDM 2>/dev/null | grep -q 'provider: gamma' ||
	skip "libfabric lists no gamma FI_EP_RDM endpoint (provider not built?)"
N=200 # messages per stream

# Bad input gets a clear error, not a hang.
out=$(timeout 10 "$top/experiments/dq/gamma-streams" --nodes 1 2>&1) && fail "gamma-streams --nodes 1 succeeded"
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

# Packets and bytes sent by htb class $2 on device $1 (namespace $3): "P B",
# "0 0" when the class does not exist.
class_sent()
{
	local -a tcx=(tc)
	[ -n "${3:-}" ] && tcx=(ip netns exec "$3" tc)
	"${tcx[@]}" -s class show dev "$1" | awk -v c="$2" '
		$1 == "class" { cur = $3 }
		$1 == "Sent" && cur == c { p = $4; b = $2 }
		END { printf "%d %d\n", p, b }'
}

# Counters of both bands on the four link ends the traffic crosses: node 0's
# uplink and node 1's bridge port (data), node 1's uplink and node 0's bridge
# port (answers and acknowledgements).  One line per end:
# "END high_pkts high_bytes low_pkts low_bytes".
ENDS="n0:gc-C-n0 p1:gc-C-p1 n1:gc-C-n1 p0:gc-C-p0"
snap()
{
	local c=$1 e dev ns
	for e in $ENDS; do
		dev=${e#*:}
		dev=${dev/C/$c}
		ns=
		[[ $dev = *-n[0-9]* ]] && ns=$dev
		echo "${e%%:*} $(class_sent "$dev" 1:10 "$ns") $(class_sent "$dev" 1:20 "$ns")"
	done
}
# delta BEFORE AFTER END: "high_pkts low_pkts high_bytes" sent by that end in between.
delta()
{
	awk -v e="$3" 'NR == FNR && $1 == e { hp = $2; hb = $3; lp = $4 }
		NR != FNR && $1 == e { printf "%d %d %d\n", $2 - hp, $4 - lp, $3 - hb }' \
		<(echo "$1") <(echo "$2")
}
# A standalone acknowledgement: Ethernet header, struct gm_hdr and struct
# gm_ack_body (provider/gm_wire.h).  The provider sends these in the high
# class whatever the endpoint's class, so that they unblock senders; no data
# frame is this short (a message adds its own 32-byte header).
ACK_LEN=$((14 + 60 + 8)) # Ethernet header, struct gm_hdr (wire version 3), struct gm_ack_body

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
	read -r h l _ <<<"$(delta "$b" "$a" $e)"
	max=0
	[[ $e = p* ]] && max=$STRAY
	[ "$h" -ge $N ] && [ "$l" -le $max ] ||
		fail "dq on, high-class stream, $e: high band $h packets (want >= $N), low band $l (want <= $max)"
done
ok "dq on: $N verified high-class messages and their answers all in the high band ($(delta "$b" "$a" n0) on n0)"

b=$a
stream "$C" low
a=$(snap "$C")
# Data one way, the END_ACK message the other: low band.  The high band may
# only carry standalone acknowledgements.
for e in n0 p1 n1 p0; do
	read -r h l hb <<<"$(delta "$b" "$a" $e)"
	want=1
	[[ $e = n0 || $e = p1 ]] && want=$N
	[ "$l" -ge $want ] && [ "$hb" = $((h * ACK_LEN)) ] ||
		fail "dq on, low-class stream, $e: low band $l packets (want >= $want); high band $h packets of $hb bytes (want only $ACK_LEN-byte acks)"
done
ok "dq on: $N verified low-class messages in the low band; high band: only standalone acks ($(delta "$b" "$a" n0) on n0)"

b=$a
tcp_stream "$C"
a=$(snap "$C")
for e in n0 p1 n1 p0; do
	read -r h l _ <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge 1 ] || fail "dq on, TCP, $e: high band $h (want 0), low band $l (want >= 1)"
done
read -r h l _ <<<"$(delta "$b" "$a" n0)"
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
	read -r h l _ <<<"$(delta "$b" "$a" $e)"
	[ "$h" = 0 ] && [ "$l" -ge $((2 * N)) ] ||
		fail "dq off, $e: FIFO sent $l packets (want >= $((2 * N))), high band $h (want none)"
done
for d in "gc-$C-p0" "gc-$C-p1"; do
	[ "$(class_pkts "$d" 1:10)" = none ] || fail "$d: dq off but a high band exists"
	tc filter show dev "$d" | grep -q u32 && fail "$d: dq off but a u32 filter exists"
done
ok "dq off: both classes' $((2 * N)) verified messages through the one FIFO ($(delta "$b" "$a" n0) on n0)"
