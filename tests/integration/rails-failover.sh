#!/bin/bash
# Failover between rails over real frames: one multi-rail domain per node
# (FI_GAMMA_IFACE=n0+n0b, n1+n1b on a 2-node, 2-rail cluster), a verified
# tagged stream of eager, medium and rendezvous messages (gm-railstream;
# those above 256 KiB striped over both rails in chunks), and rail 0 taken
# down at node 1's switch port in the middle of it: every byte arrives, in
# order, no peer fails, the counters show the frames moved to rail 1, and
# both rails carried pulled data before.  Then both rails down: the stream ends with an error
# naming the peer soon after FI_GAMMA_PEER_TIMEOUT, never hangs.
. "$(dirname "$0")/cluster-lib.sh" rf
STREAM=$BUILT/tools/gm-railstream
[ -x "$STREAM" ] || fail "$STREAM not built (make check builds it)"
. "$top/tools/gamma-env.sh"

up "$NAME" --nodes 2 --rails 2
n=gc-$NAME-n
export FI_GAMMA_IFACE="${n}0+${n}0b,${n}1+${n}1b" FI_GAMMA_STATS=1 FI_LOG_LEVEL=warn FI_LOG_PROV=gamma

# stream OUT ARGS...: gm-railstream in the background, its pid in JOB; returns
# once it passed its checkpoint (it then holds until $WORK/resume exists).
stream()
{
	local out=$1
	shift
	rm -f "$WORK/resume"
	"$STREAM" -c 400 -r "$WORK/resume" "$@" "${n}0+${n}0b" "${n}1+${n}1b" >"$out" 2>&1 &
	JOB=$!
	BGPIDS="$BGPIDS $JOB"
	wait_for $JOB grep -q '^checkpoint' "$out" ||
		fail "gm-railstream did not reach its checkpoint: $WAIT_ERROR: $(cat "$out")"
}

# --- rail 0 down mid-stream ---------------------------------------------------------
stream "$WORK/one" -n 2000
ip link set "gc-$NAME-p1" down || fail "cannot take gc-$NAME-p1 down"
touch "$WORK/resume"
timeout 120 tail --pid=$JOB -f /dev/null
wait $JOB
rc=$?
BGPIDS=
out=$(cat "$WORK/one")
[ $rc = 0 ] || fail "stream over a failing rail (rc $rc): $out"
grep -q '^verified 2000 messages$' <<<"$out" || fail "not every message verified: $out"
grep -q "gamma msg stats ${n}0+${n}0b port .*rail failovers [1-9]" <<<"$out" ||
	fail "the sender's counters show no failover: $(grep 'gamma msg stats' <<<"$out")"
moved=$(grep -o "gamma stats ${n}0: .*" <<<"$out" | grep -o 'rails failed [0-9]* frames moved [0-9]*')
[ -n "$moved" ] && ! grep -q 'rails failed 0' <<<"$moved" ||
	fail "rail 0's counters show nothing moved: $(grep "gamma stats ${n}0:" <<<"$out")"
grep "^gamma stats " <<<"$out" | grep -v 'peers failed 0;' &&
	fail "a peer failed although rail 1 worked"
# Striping: the sender's pulled data went over both rails (rail 0 until it died).
striped=$(grep -o "gamma msg stats ${n}0+${n}0b port .*" <<<"$out" | grep -o 'striped bytes by rail [0-9]* [0-9]*$')
read -r s0 s1 < <(awk '{print $5, $6}' <<<"$striped")
[ -n "$s1" ] && [ "$s0" -ge $((8 << 20)) ] && [ "$s1" -ge $((8 << 20)) ] ||
	fail "the pulled data did not go over both rails: '$striped'"
grep -q "gamma msg stats ${n}1+${n}1b port .*striped pulls [1-9]" <<<"$out" ||
	fail "the receiver made no striped pull: $(grep 'gamma msg stats' <<<"$out")"
grep -E '^gamma (msg )?stats|rail [0-9]' <<<"$out" | cut -c1-600
ok "rail 0 down mid-stream: 2000 messages (8 B .. 1.2 MB) verified, no peer failed; rail 0 of node 0: $moved; $striped"

# --- every rail down ------------------------------------------------------------------
ip link set "gc-$NAME-p1" up || fail "cannot bring gc-$NAME-p1 back"
links_ready "$NAME" || fail "links not ready again"
export FI_GAMMA_PEER_TIMEOUT=2000
stream "$WORK/all" -n 100000 -f
ip link set "gc-$NAME-p1" down && ip link set "gc-$NAME-p1b" down || fail "cannot take the rails down"
t0=$(date +%s)
touch "$WORK/resume"
timeout 120 tail --pid=$JOB -f /dev/null
wait $JOB
rc=$?
BGPIDS=
took=$(($(date +%s) - t0))
out=$(cat "$WORK/all")
[ $rc -ne 124 ] || fail "gm-railstream hung with every rail down: $out"
[ $rc = 0 ] || fail "every rail down (rc $rc): $out"
grep -Eq '^error: (send to|receive from) peer gamma://[0-9a-f:]+/[0-9]+\+[0-9a-f:]+/[0-9]+ failed' <<<"$out" ||
	fail "no error naming the peer: $out"
[ "$took" -le 40 ] || fail "the stream took ${took}s to fail after every rail went down"
ok "every rail down: $(grep -m1 '^error:' <<<"$out") after ${took}s"
