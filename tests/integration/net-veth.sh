#!/bin/bash
# gm_net (the provider's lower half) over real Ethernet frames: two network
# namespaces joined by a veth pair, a sender and a receiver process.  Every
# message is verified byte by byte, in order, at the receiver; the sender
# waits until every one is acknowledged.  Runs: clean at MTU 1500 and 9000;
# under loss/reorder/duplicate/corrupt (eBPF at tc egress, see run_faults); a killed receiver (the sender's
# outstanding frames must fail with -FI_EIO); two processes on the same
# interface (local communication through PACKET_OUTGOING, low class).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=wait-lib.sh
. "$here/wait-lib.sh"
bin=${GM_NETTEST:-$here/../tools/gm-nettest}
[ -x "$bin" ] || bin=$(pwd)/tools/gm-nettest

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (network namespaces, veth, raw packet sockets)"
	exit 77
fi
[ -x "$bin" ] || { echo "FAIL: gm-nettest not built ($bin)"; exit 1; }

sfx=$$$((RANDOM % 100))
A=gmna$sfx B=gmnb$sfx VA=gva$sfx VB=gvb$sfx
tmp=$(mktemp -d /tmp/gm-netveth.XXXXXX)
pids=()

# ip netns exec becomes `timeout`, whose child is gm-nettest: kill both, by PID.
killtree() {
	local c
	for c in $(ps --ppid "$1" -o pid= 2>/dev/null); do kill -9 "$c" 2>/dev/null; done
	kill -9 "$1" 2>/dev/null
}
cleanup() {
	for p in "${pids[@]}"; do killtree "$p"; done
	wait 2>/dev/null
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -5 "$f"; done; exit 1; }

ip netns add "$A" && ip netns add "$B" || fail "cannot create namespaces"
ip link add "$VA" netns "$A" type veth peer name "$VB" netns "$B" || fail "cannot create veth"
ip -n "$A" link set "$VA" up && ip -n "$B" link set "$VB" up || fail "cannot bring veth up"

wait_carrier() {
	for _ in $(seq 50); do
		[ "$(ip netns exec "$B" cat /sys/class/net/"$VB"/carrier 2>/dev/null)" = 1 ] &&
			[ "$(ip netns exec "$A" cat /sys/class/net/"$VA"/carrier 2>/dev/null)" = 1 ] &&
			return 0
		sleep 0.1
	done
	fail "veth carrier did not come up"
}
wait_carrier
MACA=$(ip netns exec "$A" cat /sys/class/net/"$VA"/address)
MACB=$(ip netns exec "$B" cat /sys/class/net/"$VB"/address)

# start_recv NS IF PORT LOG ARGS...: background receiver, wait until its port is open.
start_recv() {
	local ns=$1 ifc=$2 port=$3 log=$4
	shift 4
	ip netns exec "$ns" timeout 60 "$bin" recv -i "$ifc" -p "$port" "$@" >"$log" 2>&1 &
	rpid=$!
	pids+=("$rpid")
	wait_for "$rpid" grep -qs "^recv: " "$log" && return 0
	cat "$log"
	fail "receiver did not start: $WAIT_ERROR"
}

# pair NAME N [sender args...]: receiver in B, sender in A, both must verify.
# The receiver keeps acknowledging until the sender has all its acks.
pair() {
	local name=$1 n=$2
	shift 2
	start_recv "$B" "$VB" 7 "$tmp/$name.recv.log" -n "$n" -t 50 -l "$tmp/$name.done"
	ip netns exec "$A" timeout 60 "$bin" send -i "$VA" -p 9 -d "$MACB/7" -n "$n" -t 50 "$@" \
		>"$tmp/$name.send.log" 2>&1 || fail "$name: sender: $(cat "$tmp/$name.send.log")"
	touch "$tmp/$name.done"
	wait "$rpid" || fail "$name: receiver: $(cat "$tmp/$name.recv.log")"
	grep "^OK" "$tmp/$name.recv.log"
	grep "^OK" "$tmp/$name.send.log"
}

# netem is not built into this kernel (CONFIG_NET_SCH_NETEM unset), so the
# same faults come from an eBPF program at each veth's egress (clsact):
# 5% loss, 5% duplicates, 1% one-bit corruption, and 25% of the frames
# delayed behind the others through a slow HTB class (reordering).
run_faults() {
	local src=$here/../../experiments/faults/gm-faults.bpf.c obj=$tmp/gm-faults.o v ns
	[ -f "$src" ] || src=$(cd "$here/../.." && pwd)/experiments/faults/gm-faults.bpf.c
	if ! command -v clang >/dev/null; then
		echo "SKIP (faults part only): clang not found, cannot build the fault injector"
		return 0
	fi
	clang -O2 -target bpf -I/usr/include/"$(gcc -print-multiarch 2>/dev/null)" \
		-DLOSS=50 -DDUP=50 -DCORRUPT=10 -DREORDER=250 -c "$src" -o "$obj" ||
		fail "cannot compile $src"
	for v in "$A:$VA" "$B:$VB"; do
		ns=${v%%:*} v=${v#*:}
		ip netns exec "$ns" tc qdisc add dev "$v" clsact &&
		ip netns exec "$ns" tc filter add dev "$v" egress bpf da obj "$obj" sec tc &&
		ip netns exec "$ns" tc qdisc add dev "$v" root handle 1: htb default 10 &&
		ip netns exec "$ns" tc class add dev "$v" parent 1: classid 1:10 htb rate 10gbit quantum 60000 &&
		ip netns exec "$ns" tc class add dev "$v" parent 1: classid 1:20 htb rate 200mbit \
			ceil 200mbit quantum 9100 || fail "cannot set up the fault injection on $v"
	done
	pair faults 20000 -r 1000
	retx=$(sed -n 's/^OK.*retransmits \([0-9]*\).*/\1/p' "$tmp/faults.send.log")
	[ "${retx:-0}" -gt 0 ] || fail "faults: no retransmits"
	bad=$(sed -n 's/^gamma stats.*bad csum \([0-9]*\).*/\1/p' "$tmp"/faults.*.log | awk '{s += $1} END {print s + 0}')
	[ "${bad:-0}" -gt 0 ] || fail "faults: corrupted frames but no bad checksum counted"
	dup=$(sed -n 's/^gamma stats.*, dup \([0-9]*\).*/\1/p' "$tmp/faults.recv.log")
	ooo=$(sed -n 's/^gamma stats.*, ooo \([0-9]*\).*/\1/p' "$tmp/faults.recv.log")
	[ "${dup:-0}" -gt 0 ] && [ "${ooo:-0}" -gt 0 ] || fail "faults: no duplicates or no reordering seen"
	echo "ok: faults: $retx retransmits, $bad bad checksums, $dup duplicates, $ooo out of order"
	for v in "$A:$VA" "$B:$VB"; do
		ns=${v%%:*} v=${v#*:}
		ip netns exec "$ns" tc qdisc del dev "$v" clsact
		ip netns exec "$ns" tc qdisc del dev "$v" root
	done
}

pair clean1500 20000
grep -q "bad csum 0" "$tmp/clean1500.send.log" || fail "clean link counted bad checksums"

ip -n "$A" link set "$VA" mtu 9000 && ip -n "$B" link set "$VB" mtu 9000 || fail "mtu 9000"
wait_carrier
pair clean9000 20000
grep -q "max body 8940" "$tmp/clean9000.send.log" || fail "MTU 9000 not used"
ip -n "$A" link set "$VA" mtu 1500 && ip -n "$B" link set "$VB" mtu 1500
wait_carrier

run_faults

# A receiver killed mid-stream: the sender fails its outstanding frames.
start_recv "$B" "$VB" 7 "$tmp/kill.recv.log" -n 1000000000 -t 50 -q
ip netns exec "$A" timeout 60 "$bin" send -i "$VA" -p 9 -d "$MACB/7" -n 1000000000 -t 50 \
	-T 1000 -x >"$tmp/kill.send.log" 2>&1 &
spid=$!
pids+=("$spid")
# Mid-stream: the receiver has verified its first 1000 messages.
wait_for "$spid $rpid" grep -qs "^recv: streaming" "$tmp/kill.recv.log" ||
	fail "killed receiver: the stream did not start: $WAIT_ERROR"
killtree "$rpid"
wait "$rpid" 2>/dev/null
wait "$spid" || fail "killed receiver: $(cat "$tmp/kill.send.log")"
grep "^OK" "$tmp/kill.send.log"

# Local communication: both processes on the same interface.
start_recv "$A" "$VA" 7 "$tmp/local.recv.log" -n 20000 -t 50 -l "$tmp/local.done"
ip netns exec "$A" timeout 60 "$bin" send -i "$VA" -p 9 -d "$MACA/7" -n 20000 -t 50 -L \
	>"$tmp/local.send.log" 2>&1 || fail "local: sender: $(cat "$tmp/local.send.log")"
touch "$tmp/local.done"
wait "$rpid" || fail "local: receiver: $(cat "$tmp/local.recv.log")"
grep "^OK" "$tmp/local.recv.log"
grep "^OK" "$tmp/local.send.log"
# The receiver outlived the sender: it got exactly the frames sent to it.
txrx() { sed -n "s/^gamma stats.*: tx \([0-9]*\) frames.*, rx \([0-9]*\) frames.*/\1 \2/p" "$1"; }
read -r stx srx <<<"$(txrx "$tmp/local.send.log")"
read -r rtx rrx <<<"$(txrx "$tmp/local.recv.log")"
[ "$stx" = "$rrx" ] || fail "local: sender sent $stx frames, receiver received $rrx"
grep -q "(high 0 low [1-9]" "$tmp/local.send.log" || fail "local: -L sender did not send low class"

# Two endpoints in one process on one interface.
ip netns exec "$A" timeout 60 "$bin" self -i "$VA" -p 11 -n 5000 -t 50 >"$tmp/self.log" 2>&1 ||
	fail "self: $(cat "$tmp/self.log")"
grep "^OK self" "$tmp/self.log" || fail "self: $(cat "$tmp/self.log")"
read -r stx srx <<<"$(txrx "$tmp/self.log")"
# (an ack sent while closing is not received: allow two)
[ "$srx" -le "$stx" ] && [ $((stx - srx)) -le 2 ] || fail "self: sent $stx frames, received $srx"

# A busy port is refused (the holder waits until it is killed).
start_recv "$A" "$VA" 7 "$tmp/busy.recv.log" -n 1 -t 60
ip netns exec "$A" timeout 10 "$bin" recv -i "$VA" -p 7 -n 1 -t 1 >"$tmp/busy2.log" 2>&1 &&
	fail "second process got busy port 7"
grep -q "in use" "$tmp/busy2.log" || fail "busy port: $(cat "$tmp/busy2.log")"
killtree "$rpid"
wait "$rpid" 2>/dev/null
echo "ok: busy port refused"
echo "PASS"
