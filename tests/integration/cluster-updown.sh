#!/bin/bash
# gamma-cluster up/down: what 'up' makes exists as specified, 'down' leaves
# no residue, a failed 'up' leaves nothing behind, a taken NAME and a
# non-root caller are refused.
. "$(dirname "$0")/cluster-lib.sh" ud

# --- flat layout, shaped, double queue ---------------------------------------
[ -z "$(residue "$NAME")" ] || fail "residue of $NAME before the test: $(residue "$NAME")"
up "$NAME" --nodes 3 --rate 1gbit --loss 5% --dq on
for i in 0 1 2; do
	ip link show "gc-$NAME-n$i" >/dev/null 2>&1 || fail "node interface gc-$NAME-n$i missing"
	ip -br link show master "gc-$NAME-br" | grep -q "^gc-$NAME-p$i" ||
		fail "gc-$NAME-p$i is not a port of gc-$NAME-br"
	[ -z "$(ip -4 -br addr show dev "gc-$NAME-n$i" | awk '{print $3}')" ] ||
		fail "flat layout must not assign addresses (gc-$NAME-n$i)"
	for d in "gc-$NAME-n$i" "gc-$NAME-p$i"; do
		tc qdisc show dev "$d" | grep -q '^qdisc htb 1: root' || fail "no htb on $d"
		[ "$(tc class show dev "$d" | grep -c 'leaf')" = 2 ] || fail "$d: not two leaf classes"
		tc filter show dev "$d" egress | grep -q bytecode || fail "$d: no loss filter"
	done
done
[ "$("$GC" ifaces "$NAME")" = "gc-$NAME-n0,gc-$NAME-n1,gc-$NAME-n2" ] || fail "ifaces: $("$GC" ifaces "$NAME")"
[ "$("$GC" exec "$NAME" 2 sh -c 'echo $GAMMA_IFACE')" = "gc-$NAME-n2" ] || fail "exec: GAMMA_IFACE"
"$GC" status "$NAME" >"$WORK/status" || fail "status failed"
grep -q "gc-$NAME-p1" "$WORK/status" || fail "status does not show bridge ports"
"$GC" list | grep -q "^$NAME " || fail "list does not show $NAME"
ok "flat cluster with 3 nodes, htb + double queue + loss filter on all 6 link ends"

# A second up of the same NAME is refused and leaves the first intact.
before=$(residue "$NAME")
"$GC" up "$NAME" --nodes 2 >"$WORK/o" 2>&1 && fail "second up of $NAME succeeded"
grep -q 'already exists' "$WORK/o" || fail "second up: unclear message: $(cat "$WORK/o")"
[ "$(residue "$NAME")" = "$before" ] || fail "refused second up changed the first cluster"
ok "second up of the same name refused: $(cat "$WORK/o")"

timeout 30 "$GC" down "$NAME" >/dev/null || fail "down failed"
[ -z "$(residue "$NAME")" ] || fail "residue after down: $(residue "$NAME")"
timeout 30 "$GC" down "$NAME" >/dev/null || fail "second down (idempotent) failed"
ok "down removes everything; down again is a no-op"

# --- one namespace per node, jumbo MTU -------------------------------------------
up "$NAME" --nodes 2 --netns --mtu 9000 --dq on --gso off
sub=$("$GC" subnet "$NAME") || fail "subnet"
base=${sub%.0/24}
for i in 0 1; do
	ns=gc-$NAME-n$i
	ip netns list | grep -q "^$ns\b" || fail "namespace $ns missing"
	ip -n "$ns" -br addr show dev "gc-$NAME-n$i" | grep -q " $base.$((i + 1))/24" ||
		fail "$ns: address $base.$((i + 1))/24 missing"
	ip -n "$ns" link show lo | grep -q 'state UNKNOWN\|UP' || fail "$ns: lo not up"
	ip -n "$ns" route | grep -q '^default' && fail "$ns: has a default route"
	[ "$(ip -n "$ns" -o link show dev "gc-$NAME-n$i" | grep -o 'mtu [0-9]*')" = "mtu 9000" ] ||
		fail "$ns: mtu is not 9000"
	[ "$("$GC" exec "$NAME" $i hostname)" = "$ns" ] || fail "exec on node $i: hostname is not $ns"
	ip link show "gc-$NAME-n$i" >/dev/null 2>&1 && fail "gc-$NAME-n$i visible in the caller's namespace"
	for end in "ip netns exec $ns ethtool -k gc-$NAME-n$i" "ethtool -k gc-$NAME-p$i"; do
		# shellcheck disable=SC2086
		[ "$($end | grep -cE '^(tcp|generic)-segmentation-offload: off')" = 2 ] ||
			fail "--gso off: TSO/GSO still on ($end)"
	done
done
"$GC" status "$NAME" | grep -q 'gso=off' || fail "status does not show gso=off"
for d in "gc-$NAME-p0" "gc-$NAME-br"; do
	ip -o link show dev "$d" | grep -q 'mtu 9000' || fail "$d: mtu is not 9000"
done
# The cluster subnet overlaps nothing else of the root namespace.
others=$(ip -4 -o addr show | grep -v "gc-$NAME-br" | awk '{print $4}' | grep -c "^$base\.") || true
[ "$others" = 0 ] || fail "subnet $sub also used elsewhere"
hf=$("$GC" hostfile "$NAME" --slots 2) || fail "hostfile"
[ "$(cat "$hf")" = "gc-$NAME-n0 slots=2
gc-$NAME-n1 slots=2" ] || fail "hostfile content: $(cat "$hf")"
ok "netns cluster: namespaces, addresses in $sub, mtu 9000, TSO/GSO off on both link ends, hostnames, hostfile"
timeout 30 "$GC" down "$NAME" >/dev/null || fail "down failed"
[ -z "$(residue "$NAME")" ] || fail "residue after netns down: $(residue "$NAME")"
ok "netns down removes everything"

# --- failed ups leave nothing ------------------------------------------------------
for bad in "--nodes 2 --mtu 99999" "--nodes 0" "--nodes 2 --dq maybe" "--nodes 2 --gso maybe" "--nodes 2 --reorder 25%" \
	"--nodes 2 --rate fast" "--nodes 2 --bogus"; do
	# shellcheck disable=SC2086
	timeout 30 "$GC" up "$NAME" $bad >"$WORK/o" 2>&1 && fail "up $bad succeeded"
	[ -s "$WORK/o" ] || fail "up $bad: no message"
	[ -z "$(residue "$NAME")" ] || fail "up $bad left: $(residue "$NAME")"
done
ok "invalid options refused with a message, nothing left (e.g. $(head -1 "$WORK/o"))"
timeout 30 "$GC" up "Bad_$NAME" --nodes 2 >"$WORK/o" 2>&1 && fail "invalid name accepted"
grep -q 'invalid NAME' "$WORK/o" || fail "invalid name: unclear message"

# A failure halfway (injected at the last node's bridge port, after both
# namespaces and the bridge exist) undoes everything.
GAMMA_CLUSTER_FAIL_TEST=gc-$NAME-p2 timeout 30 "$GC" up "$NAME" --nodes 3 --netns --dq on \
	>"$WORK/o" 2>&1 && fail "up with an injected failure succeeded"
grep -q 'failed; removing' "$WORK/o" || fail "injected failure: no message: $(cat "$WORK/o")"
[ -z "$(residue "$NAME")" ] || fail "failed up left: $(residue "$NAME")"
ok "an up failing halfway leaves nothing behind"

# --- non-root is refused -------------------------------------------------------------
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$GC" up "$NAME" --nodes 2 >"$WORK/o" 2>&1 &&
		fail "non-root up succeeded"
	grep -q 'must run as root' "$WORK/o" || fail "non-root: unclear message: $(cat "$WORK/o")"
	[ -z "$(residue "$NAME")" ] || fail "non-root up left: $(residue "$NAME")"
	ok "non-root refused: $(cat "$WORK/o")"
else
	echo "note: setpriv missing, non-root refusal not checked"
fi
