#!/bin/bash
# The double queue's message filter on real frames: with --dq on, high-class
# gamma frames (flags byte 0x00) are counted in the high band (htb class
# 1:10), low-class ones (0x04) and IP traffic (ARP, TCP) in the low band
# (1:20), on the sender's egress and on the receiver's bridge port, whatever
# SO_PRIORITY the sender sets; with --dq off there is one FIFO class.
. "$(dirname "$0")/cluster-lib.sh" dq
[ -x "$RAWFRAME" ] || fail "$RAWFRAME not built (make check builds it)"
ET=0x88B5
NH=40 # high-class frames
NL=30 # low-class frames

# send_mix CLUSTER: NH high + NL low frames from node 0 to node 1, all
# verified by the receiver; SO_PRIORITY 6 on the low ones (the kernel's
# default priomap would put TC_PRIO_INTERACTIVE in the first band).
send_mix()
{
	local c=$1 mac r
	mac=$("$GC" exec "$c" 1 sh -c 'cat /sys/class/net/$GAMMA_IFACE/address')
	start_recv timeout 30 "$GC" exec "$c" 1 sh -c "exec $RAWFRAME recv -w \$GAMMA_IFACE $ET $((NH + NL)) 5000"
	timeout 20 "$GC" exec "$c" 0 sh -c "exec $RAWFRAME send -f 0x00 -p 0 \$GAMMA_IFACE $mac $ET $NH" \
		>"$WORK/send.out" 2>&1 || fail "send high: $(cat "$WORK/send.out")"
	timeout 20 "$GC" exec "$c" 0 sh -c "exec $RAWFRAME send -f 0x04 -p 6 -n $NH \$GAMMA_IFACE $mac $ET $NL" \
		>"$WORK/send.out" 2>&1 || fail "send low: $(cat "$WORK/send.out")"
	# (not in a subshell: only this shell can wait for the receiver)
	wait_recv >"$WORK/recv.line"
	r=$(cat "$WORK/recv.line")
	[ "$r" = "gm-rawframe: received $((NH + NL)) valid of $((NH + NL)) (0 invalid, 0 duplicate)" ] ||
		fail "frames lost or damaged: $r"
}

# --- dq on ---------------------------------------------------------------------
C=$NAME
up "$C" --nodes 2 --netns --dq on --rate 1gbit
send_mix "$C"
# IP traffic: a TCP connection attempt to a closed port on node 1 (ARP
# request and reply, SYN, RST); "refused" proves the round trip happened.
ip1=$(ip -n "gc-$C-n1" -4 -br addr show dev "gc-$C-n1" | awk '{print $3}')
ip1=${ip1%/*}
out=$(timeout 10 "$GC" exec "$C" 0 bash -c "echo x >/dev/tcp/$ip1/9" 2>&1)
grep -q 'refused' <<<"$out" || fail "TCP to $ip1 did not get a RST back: $out"

for side in "gc-$C-n0 gc-$C-n0" "gc-$C-p1 -"; do
	read -r dev ns <<<"$side"
	[ "$ns" = - ] && ns=
	hi=$(class_pkts "$dev" 1:10 "$ns")
	lo=$(class_pkts "$dev" 1:20 "$ns")
	[ "$hi" = "$NH" ] || fail "$dev: high band sent $hi packets, expected exactly $NH"
	# low band: the NL low frames plus at least an ARP frame and a TCP segment
	[ "$lo" != none ] && [ "$lo" -ge $((NL + 2)) ] ||
		fail "$dev: low band sent $lo packets, expected >= $((NL + 2))"
	ok "dq on, $dev egress: high band $hi packets (= $NH high frames), low band $lo (>= $NL low frames + IP)"
done
timeout 30 "$GC" down "$C" >/dev/null || fail "down"

# --- dq off: one FIFO ------------------------------------------------------------
up "$C" --nodes 2 --netns --dq off --rate 1gbit
send_mix "$C"
for d in "gc-$C-p0" "gc-$C-p1"; do
	[ "$(class_pkts "$d" 1:10)" = none ] || fail "$d: dq off but a high band exists"
	tc filter show dev "$d" | grep -q u32 && fail "$d: dq off but a u32 filter exists"
	[ "$(tc qdisc show dev "$d" | grep -c 'pfifo')" = 1 ] || fail "$d: not exactly one FIFO"
done
all=$(class_pkts "gc-$C-p1" 1:20)
[ "$all" -ge $((NH + NL)) ] || fail "dq off: FIFO sent $all packets, expected >= $((NH + NL))"
ok "dq off: one FIFO class, $all packets through it"
