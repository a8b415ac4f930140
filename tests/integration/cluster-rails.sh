#!/bin/bash
# gamma-cluster --rails: every node has one link per rail, rail r of every
# node on its own bridge, each link shaped like a single-rail one; the rails
# are separate Ethernet segments (a broadcast on rail 0 reaches rail 0 only);
# exec, ifaces, subnets and status show the rails; down leaves no interface,
# bridge, namespace, qdisc or state; up refuses names it did not make and a
# failed up leaves nothing.
. "$(dirname "$0")/cluster-lib.sh" rl
[ -x "$RAWFRAME" ] || fail "$RAWFRAME not built (make check builds it)"
ET=0x88B5

# Everything residue() sees, plus any qdisc on a device of the cluster.
no_residue()
{
	local r
	r="$(residue "$NAME")$(tc qdisc show | grep -F -- "gc-$NAME-")"
	[ -z "$r" ] || fail "$1: residue: $r"
}

# rx FILE ARGS...: a gm-rawframe receiver in the background, ready when this
# returns; its pid in RX_PID.
rx()
{
	local out=$1
	shift
	"$RAWFRAME" recv "$@" >"$out" 2>&1 &
	RX_PID=$!
	BGPIDS="$BGPIDS $RX_PID"
	wait_for $RX_PID grep -q 'gm-rawframe: ready' "$out" || fail "receiver not ready: $WAIT_ERROR: $(cat "$out")"
}

# --- flat layout, two rails, shaped, double queue --------------------------------
no_residue "before the test"
up "$NAME" --nodes 2 --rails 2 --rate 1gbit --dq on
for i in 0 1; do
	for r in "" b; do
		ip -br link show master "gc-$NAME-br$r" | grep -q "^gc-$NAME-p$i$r@" ||
			fail "gc-$NAME-p$i$r is not a port of gc-$NAME-br$r"
		for d in "gc-$NAME-n$i$r" "gc-$NAME-p$i$r"; do
			tc qdisc show dev "$d" | grep -q '^qdisc htb 1: root' || fail "no htb on $d"
			tc class show dev "$d" | grep -q 'class htb 1:1 root rate 1Gbit' || fail "$d: not 1gbit"
			[ "$(tc class show dev "$d" | grep -c 'leaf')" = 2 ] || fail "$d: not two leaf classes"
		done
	done
done
[ "$(ip -br link show master "gc-$NAME-br" | wc -l)" = 2 ] || fail "rail 0 bridge has other ports"
[ "$(ip -br link show master "gc-$NAME-brb" | wc -l)" = 2 ] || fail "rail 1 bridge has other ports"
n=gc-$NAME-n
[ "$("$GC" ifaces "$NAME")" = "${n}0,${n}0b,${n}1,${n}1b" ] || fail "ifaces: $("$GC" ifaces "$NAME")"
[ "$("$GC" ifaces "$NAME" --rail 1)" = "${n}0b,${n}1b" ] || fail "ifaces --rail 1"
[ "$("$GC" ifaces "$NAME" --rail 0)" = "${n}0,${n}1" ] || fail "ifaces --rail 0"
"$GC" ifaces "$NAME" --rail 2 >"$WORK/o" 2>&1 && fail "ifaces --rail 2 of a 2-rail cluster succeeded"
grep -q 'rails 0..1' "$WORK/o" || fail "ifaces --rail 2: unclear message: $(cat "$WORK/o")"
[ "$("$GC" exec "$NAME" 1 sh -c 'echo $GAMMA_IFACE')" = "${n}1,${n}1b" ] || fail "exec: GAMMA_IFACE"
"$GC" status "$NAME" >"$WORK/status" || fail "status failed"
grep -q "^rail 1: bridge gc-$NAME-brb " "$WORK/status" || fail "status: no rail 1 bridge"
grep -Eq "^1 +1 +${n}1b .* gc-$NAME-p1b " "$WORK/status" || fail "status: no rail 1 row of node 1"
grep -q "btl_gamma_if_include: ${n}0,${n}0b,${n}1,${n}1b$" "$WORK/status" || fail "status: iface list"
"$GC" list | grep -q "^$NAME .*(2 rails)$" || fail "list does not show the rails"
ok "flat cluster, 2 nodes x 2 rails: 2 bridges, htb + double queue on all 8 link ends, ifaces/exec/status"

# Separate segments: a broadcast of N frames on node 0's rail 0 reaches node
# 1's rail 0 (every frame verified) and not its rail 1, which then receives
# exactly the M frames node 0 sends on rail 1.
N=50 M=30
bg=$BGPIDS
rx "$WORK/r1" -w "${n}1b" $ET $((N + M)) 3000
r1=$RX_PID
rx "$WORK/r0" "${n}1" $ET $N 30000
r0=$RX_PID
timeout 20 "$RAWFRAME" send "${n}0" ff:ff:ff:ff:ff:ff $ET $N >"$WORK/s" 2>&1 || fail "send rail 0: $(cat "$WORK/s")"
wait $r0 || fail "rail 0 lost frames: $(cat "$WORK/r0")"
grep -q "received $N valid of $N (0 invalid, 0 duplicate)" "$WORK/r0" || fail "rail 0: $(cat "$WORK/r0")"
timeout 20 "$RAWFRAME" send -n $N "${n}0b" ff:ff:ff:ff:ff:ff $ET $M >"$WORK/s" 2>&1 ||
	fail "send rail 1: $(cat "$WORK/s")"
kill -TERM $r1
wait $r1
BGPIDS=$bg # both reaped: their pids may now be anyone's
grep -q "received $M valid of $((N + M)) (0 invalid, 0 duplicate)" "$WORK/r1" ||
	fail "rail 1 must see its own $M frames and none of rail 0's: $(cat "$WORK/r1")"
ok "rails are separate segments: rail 0 broadcast $N/$N on rail 0, 0 on rail 1; rail 1 got its $M"

timeout 30 "$GC" down "$NAME" >/dev/null || fail "down failed"
no_residue "after down"
ok "down removes both rails' links, bridges, qdiscs and the state"

# --- one namespace per node, three rails ----------------------------------------
up "$NAME" --nodes 2 --netns --rails 3 --mtu 9000
subs=$("$GC" subnets "$NAME") || fail "subnets"
IFS=, read -ra sub <<<"$subs"
[ ${#sub[@]} = 3 ] || fail "subnets: $subs"
[ "$(printf '%s\n' "${sub[@]}" | sort -u | wc -l)" = 3 ] || fail "rails share a subnet: $subs"
[ "$("$GC" subnet "$NAME")" = "${sub[0]}" ] || fail "subnet is not rail 0's"
for i in 0 1; do
	ns=gc-$NAME-n$i
	r=0
	for l in "" b c; do
		ip -n "$ns" -br addr show dev "$ns$l" | grep -q " ${sub[$r]%.0/24}.$((i + 1))/24" ||
			fail "$ns$l: no address in ${sub[$r]}"
		ip -n "$ns" -o link show dev "$ns$l" | grep -q 'mtu 9000' || fail "$ns$l: mtu is not 9000"
		ip -br addr show dev "gc-$NAME-br$l" | grep -q " ${sub[$r]%.0/24}.254/24" ||
			fail "bridge gc-$NAME-br$l: no address in ${sub[$r]}"
		r=$((r + 1))
	done
	[ "$("$GC" exec "$NAME" $i sh -c 'echo $GAMMA_IFACE')" = "$ns,${ns}b,${ns}c" ] ||
		fail "exec on node $i: GAMMA_IFACE"
done
ok "netns cluster, 2 nodes x 3 rails: each rail its own /24 ($subs), mtu 9000, GAMMA_IFACE lists"

# The cluster as hosts for npb-runs/run and gamma-bench (tools/lib/hosts.sh):
# each host with all its rails, every rail checked, every rail's subnet.
if command -v fi_info >/dev/null; then
	(
		. "$top/tools/gamma-env.sh"
		. "$top/tools/lib/hosts.sh"
		mkdir "$WORK/h"
		hosts_from_cluster "$NAME" "$WORK/h" && hosts_probe "$WORK/h" && hosts_write "$WORK/h" 1 ||
			fail "hosts.sh: $HOSTS_ERROR"
		[ "$(cat "$WORK/h/hosts")" = "gc-$NAME-n0 iface=gc-$NAME-n0,gc-$NAME-n0b,gc-$NAME-n0c
gc-$NAME-n1 iface=gc-$NAME-n1,gc-$NAME-n1b,gc-$NAME-n1c" ] || fail "hosts file: $(cat "$WORK/h/hosts")"
		[ "$HOSTS_SUBNETS" = "$subs" ] || fail "hosts' subnets $HOSTS_SUBNETS, not every rail's ($subs)"
		grep -q "^gc-$NAME-n1 gc-$NAME-n1,gc-$NAME-n1b,gc-$NAME-n1c$" "$WORK/h/agent.map" ||
			fail "agent map: $(cat "$WORK/h/agent.map")"
	) || exit 1
	ok "as hosts (tools/lib/hosts.sh): every rail of each node probed, every rail's subnet for the TCP baselines"
else
	echo "note: fi_info missing, the hosts view of the rails not checked"
fi
timeout 30 "$GC" down "$NAME" >/dev/null || fail "down failed"
no_residue "after netns down"
ok "netns down removes everything"

# --- what up did not make it neither uses nor removes -------------------------------
for squat in "gc-$NAME-p1b" "gc-$NAME-brb"; do
	ip link add "$squat" type bridge || fail "cannot make $squat"
	timeout 30 "$GC" up "$NAME" --nodes 2 --rails 2 >"$WORK/o" 2>&1 && fail "up over $squat succeeded"
	grep -q "$squat already exists" "$WORK/o" || fail "up over $squat: unclear message: $(cat "$WORK/o")"
	timeout 30 "$GC" down "$NAME" >/dev/null
	ip link show "$squat" >/dev/null 2>&1 || fail "$squat, not the cluster's, was removed"
	ip link del "$squat"
	no_residue "refused up over $squat"
done
ok "an interface of another owner with a rail's name: up refused, down leaves it"

GAMMA_CLUSTER_FAIL_TEST=gc-$NAME-p1b timeout 30 "$GC" up "$NAME" --nodes 2 --netns --rails 2 \
	--dq on >"$WORK/o" 2>&1 && fail "up with an injected failure succeeded"
grep -q 'failed; removing' "$WORK/o" || fail "injected failure: no message: $(cat "$WORK/o")"
no_residue "failed up"
for bad in "--rails 0" "--rails 9" "--rails two" "--rails"; do
	# shellcheck disable=SC2086
	timeout 30 "$GC" up "$NAME" --nodes 2 $bad >"$WORK/o" 2>&1 && fail "up $bad succeeded"
	[ -s "$WORK/o" ] || fail "up $bad: no message"
	no_residue "up $bad"
done
ok "a failing up (last rail's port) and invalid --rails leave nothing ($(head -1 "$WORK/o"))"
