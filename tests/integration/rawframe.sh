#!/bin/bash
# Raw EtherType-0x88B5 frames cross the virtual cluster from node 0's
# interface to node 1's, every byte verified, in both layouts; --loss 100%
# stops them and --loss 50% drops a plausible share.
. "$(dirname "$0")/cluster-lib.sh" rf
[ -x "$RAWFRAME" ] || fail "$RAWFRAME not built (make check builds it)"
ET=0x88B5

# node_mac CLUSTER NODE
node_mac() { "$GC" exec "$1" "$2" sh -c 'cat /sys/class/net/$GAMMA_IFACE/address'; }

# cross CLUSTER COUNT TIMEOUT_MS SIZE: node 0 sends COUNT frames to node 1;
# prints the receiver's result line (it waits TIMEOUT_MS after the sender is
# done for frames that are still on their way).
cross()
{
	local c=$1 n=$2 t=$3 s=$4 mac
	mac=$(node_mac "$c" 1) || fail "no MAC for node 1"
	start_recv timeout 30 "$GC" exec "$c" 1 sh -c "exec $RAWFRAME recv -w \$GAMMA_IFACE $ET $n $t"
	timeout 30 "$GC" exec "$c" 0 sh -c "exec $RAWFRAME send -s $s \$GAMMA_IFACE $mac $ET $n" \
		>"$WORK/send.out" 2>&1 || fail "sender: $(cat "$WORK/send.out")"
	grep -q "sent $n frames" "$WORK/send.out" || fail "sender: $(cat "$WORK/send.out")"
	wait_recv
}

for layout in flat netns; do
	c=$NAME${layout:0:1}
	opt=; [ $layout = netns ] && opt=--netns
	up "$c" --nodes 2 $opt
	r=$(cross "$c" 500 5000 1486)
	[ "$r" = "gm-rawframe: received 500 valid of 500 (0 invalid, 0 duplicate)" ] ||
		fail "$layout: $r"
	ok "$layout: 500 full-size frames (1500-byte MTU) from node 0 to node 1, all bytes verified"
	timeout 30 "$GC" down "$c" >/dev/null || fail "down $c"
done

up "${NAME}l" --nodes 2 --netns --loss 100%
r=$(cross "${NAME}l" 50 1000 200)
[ "$r" = "gm-rawframe: received 0 valid of 50 (0 invalid, 0 duplicate)" ] || fail "loss 100%: $r"
ok "--loss 100%: nothing arrives ($r)"
timeout 30 "$GC" down "${NAME}l" >/dev/null || fail "down"

# Loss applies on each link end a frame crosses (sender's uplink, receiver's
# downlink): 50% per end lets 25% through; 400 frames -> mean 100, sd 8.7.
up "${NAME}h" --nodes 2 --loss 50%
r=$(cross "${NAME}h" 400 1000 200)
got=$(awk '{print $3}' <<<"$r")
[ "$got" -ge 50 ] && [ "$got" -le 160 ] || fail "loss 50%: $r (expected about 100)"
grep -q '(0 invalid, 0 duplicate)' <<<"$r" || fail "loss 50%: damaged frames: $r"
ok "--loss 50% on both link ends: $got of 400 arrived (expected about 100)"
