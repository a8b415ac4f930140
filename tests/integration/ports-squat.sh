#!/bin/bash
# Port reservations under a hostile local user (provider/gm_portres.c).  In
# a private namespace with a veth pair qa-qb, while nobody
#  - binds the abstract names @gamma:88b5:IFINDEX(qa):1..4096, the port
#    reservations of aa0bd03 (holding all 65535, nobody made root's
#    fi_endpoint fail with -98), and reserves port 7 on qa among its own
#    ports (tests/tools/gm-squat),
#  - and, while root has a live endpoint on port 4242 of qa, tries to see it:
#    root's reservation directory is closed to nobody, /proc/net/unix holds
#    only nobody's own names,
# root opens libfabric endpoints on qa at random ports (gm-fitest pair qa qb,
# every message feature checked), port 7 (gm-nettest self, 100 messages
# verified), and its port 4242 receives a message.
. "$(dirname "$0")/cluster-lib.sh" sq
FITEST=$BUILT/tools/gm-fitest
NETTEST=$BUILT/tools/gm-nettest
SQUAT=$BUILT/tools/gm-squat
command -v setpriv >/dev/null || skip "'setpriv' not installed (util-linux)"
for f in "$FITEST" "$NETTEST" "$SQUAT"; do [ -x "$f" ] || fail "$f not built (make check builds it)"; done
. "$top/tools/gamma-env.sh"
NOBODY=65534
RESV=/run/gamma # root's reservations
NAMES=4096

veth_ns qa qb
ifa=$(ip -n "$NS" -o link show qa | cut -d: -f1)
maca=$(ip -n "$NS" -o link show qa | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
netns=$(stat -Lc %i "/run/netns/$NS") || fail "no inode for namespace $NS"
chmod 755 "$WORK"
cp "$SQUAT" "$WORK/gm-squat"
inns() { ip netns exec "$NS" "$@"; }
asnobody() { inns env -i PATH=/usr/bin:/bin setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
	--inh-caps=-all "$@"; }

# The squatter.  Binding all 65535 names takes minutes (the kernel hashes
# abstract names weakly, and these differ in a few digits), so it takes
# the first 4096: enough to make ports 7 and 4242 fail at aa0bd03.
# (Spelt out, not through asnobody: $! must be the squatter itself, which
# every command on the way execs, so that cleanup's kill reaches it.)
ip netns exec "$NS" env -i PATH=/usr/bin:/bin setpriv --reuid=$NOBODY --regid=$NOBODY \
	--clear-groups --inh-caps=-all "$WORK/gm-squat" 0x88b5 "$ifa" 1 $NAMES 7 >"$WORK/squat.out" 2>&1 &
squat=$!
BGPIDS="$BGPIDS $squat"
wait_for $squat grep -qs 'gm-squat: ready' "$WORK/squat.out" ||
	fail "gm-squat not ready: $WAIT_ERROR: $(cat "$WORK/squat.out")"
grep -q "holding $NAMES abstract names" "$WORK/squat.out" &&
	grep -q 'reserving port 7: held' "$WORK/squat.out" ||
	fail "the squatter did not get everything it tried: $(cat "$WORK/squat.out")"
ok "nobody holds @gamma:88b5:$ifa:1..$NAMES (qa) and its own port 7"

# Root's live endpoint on port 4242, and what nobody can learn of it.
ip netns exec "$NS" "$NETTEST" recv -i qa -p 4242 -n 1 -t 120 -T 120000 >"$WORK/recv.out" 2>&1 &
recv=$!
BGPIDS="$BGPIDS $recv"
resv=$RESV/$netns-88b5-$ifa-4242
# Held: the receiver has a flock on that very file (a killed process's
# leftover, unlocked, could have the same name).
held() { [ -e "$resv" ] && grep -q "FLOCK .* $recv [0-9a-f]*:[0-9a-f]*:$(stat -c %i "$resv") " /proc/locks; }
wait_for $recv held ||
	fail "root's port 4242: no locked reservation $resv: $WAIT_ERROR: $(cat "$WORK/recv.out"; ls -l $RESV; cat /proc/locks)"
[ "$(stat -c '%U %a' $RESV)" = "root 700" ] || fail "$RESV: $(stat -c '%U %a' $RESV), expected root 700"
out=$(asnobody ls $RESV 2>&1) && fail "nobody listed $RESV: $out"
out=$(asnobody stat "$resv" 2>&1) && fail "nobody saw root's reservation $resv: $out"
out=$(asnobody touch "$RESV/$netns-88b5-$ifa-4243" 2>&1) && fail "nobody created a reservation in $RESV"
names=$(inns cat /proc/net/unix | grep -c '@gamma:')
[ "$names" -eq $NAMES ] || fail "/proc/net/unix shows $names @gamma names, expected only nobody's $NAMES"
ok "root's live port 4242: in $RESV (root 0700), which nobody cannot list, stat or write; not in /proc/net/unix"

# Root's endpoints open although every old-style name of qa is taken.
out=$(FI_GAMMA_IFACE=qa,qb inns timeout 300 "$FITEST" pair qa qb 1048576 2>&1) ||
	fail "root's gm-fitest pair qa qb failed while nobody squats: $(tail -5 <<<"$out")"
ok "fi_endpoint on qa at random ports, every feature checked: $(grep -c '^ok:' <<<"$out") gm-fitest checks"
out=$(inns timeout 120 "$NETTEST" self -i qa -p 7 -n 100 -q 2>&1) ||
	fail "root's port 7 on qa (nobody reserved its own 7): $out"
grep -q 'OK self 100 messages' <<<"$out" || fail "port 7: data not verified: $out"
ok "root's port 7 on qa: $(grep 'OK self' <<<"$out")"
out=$(inns timeout 120 "$NETTEST" send -i qb -p 0 -d "$maca/4242" -n 1 -q 2>&1) ||
	fail "send to root's port 4242: $out"
wait $recv || fail "root's port 4242 did not receive: $(cat "$WORK/recv.out")"
grep -q '^OK' "$WORK/recv.out" || fail "port 4242: $(cat "$WORK/recv.out")"
[ ! -e "$resv" ] || fail "$resv still there after its port closed"
ok "root's port 4242 received, and its reservation went with it"
kill $squat
wait $squat 2>/dev/null
echo "all port reservation checks passed"
