#!/bin/bash
# gamma-floor's --mac-key: data frames carry gamma's frame MAC, sealed by the
# sender and checked by the receiver.  With the same secret at both ends
# every frame verifies, streamed or in messages both ways; with another
# secret at the sender none does: a stream is reported as corrupt data (exit
# 3), a message is never answered; a bad secret or a test that cannot carry
# the MAC is refused.  (gamma-bench-quick covers the floor without it.)
. "$(dirname "$0")/cluster-lib.sh" fm
FL=$BUILT/../experiments/perf/floor/gamma-floor
[ -x "$FL" ] || fail "$FL not built (make builds it)"

up "$NAME" --nodes 2 --netns --mtu 9000
mac1=$("$GC" exec "$NAME" 1 sh -c 'cat /sys/class/net/$GAMMA_IFACE/address') || fail "no MAC for node 1"
key=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
other=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')

# floor SERVER_KEY CLIENT_KEY TESTS: a server and a client; the client's
# output in $WORK/cli, its exit status in $cli_rc, the server's in $WORK/srv.
floor()
{
	timeout 120 "$GC" exec "$NAME" 1 sh -c "exec $FL --server --iface \$GAMMA_IFACE --timeout 20 --mac-key $1" \
		>"$WORK/srv" 2>&1 &
	local srv=$!
	BGPIDS="$BGPIDS $srv"
	timeout 120 "$GC" exec "$NAME" 0 sh -c "exec $FL --client $mac1 --iface \$GAMMA_IFACE --tests $3 \
		--reps 1 --seconds 0.3 --iters 50 --warmup 5 --msg-sizes 20000 --timeout 20 --mac-key $2" \
		>"$WORK/cli" 2>&1
	cli_rc=$?
	wait "$srv"
}

floor "$key" "$key" lat,bw,mmsg,msg
[ $cli_rc -eq 0 ] || fail "same secret: client exited $cli_rc: $(cat "$WORK/cli")"
[ "$(grep -c '^# verified: every byte of [1-9][0-9]* frames' "$WORK/cli")" -eq 3 ] ||
	fail "same secret: bw, mmsg and msg did not all verify frames: $(cat "$WORK/cli")"
grep -q '^# message latency: .* each with gamma.s frame MAC' "$WORK/cli" ||
	fail "same secret: the messages carried no MAC: $(cat "$WORK/cli")"
grep -q 'verified every byte of [1-9][0-9]* data frames .* 0 invalid; answered [1-9][0-9]* messages ([1-9][0-9]* frames verified, 0 invalid)' "$WORK/srv" ||
	fail "same secret: the server refused frames: $(cat "$WORK/srv")"
ok "the same secret at both ends: every frame's MAC verified, streamed and in messages both ways"

floor "$key" "$other" bw
[ $cli_rc -eq 3 ] || fail "another secret: client exited $cli_rc, not 3: $(cat "$WORK/cli")"
grep -q '^# DATA CORRUPTION: [1-9][0-9]* frames of wrong length, pattern or MAC' "$WORK/cli" ||
	fail "another secret: no corruption reported: $(cat "$WORK/cli")"
grep -q 'verified every byte of 0 data frames .* [1-9][0-9]* invalid;' "$WORK/srv" ||
	fail "another secret: the server accepted frames: $(cat "$WORK/srv")"
ok "another secret at the sender: every frame refused, reported as corrupt"

# A message under another secret: the server refuses every frame of it, so
# no answer comes, and the client fails when its --timeout runs out.  That
# wait is the outcome being tested, so it is the same 20 s that bounds every
# other wait here, the hello included: a loaded machine must not make the
# client give up before the server is up.  The client's goodbye ends the
# server.
floor "$key" "$other" msg
[ $cli_rc -eq 1 ] || fail "another secret, msg: client exited $cli_rc, not 1: $(cat "$WORK/cli")"
grep -q 'gamma-floor: message [0-9]* (3 frames): no answer' "$WORK/cli" ||
	fail "another secret, msg: no timeout reported: $(cat "$WORK/cli")"
grep -q 'answered 0 messages (0 frames verified, [1-9][0-9]* invalid)' "$WORK/srv" ||
	fail "another secret, msg: the server accepted frames: $(cat "$WORK/srv")"
ok "another secret at the sender: every frame of a message refused, no answer"

for bad in "--mac-key 0011" "--mac-key xyz0112233445566778899aabbccddee" "--tests ring --mac-key $key"; do
	# shellcheck disable=SC2086
	"$FL" --client "$mac1" --iface lo $bad >"$WORK/bad" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "'$bad': exit $rc, not 2: $(cat "$WORK/bad")"
	grep -q 'gamma-floor: .*mac-key' "$WORK/bad" || fail "'$bad': no message: $(cat "$WORK/bad")"
done
ok "a short or malformed secret, and --mac-key with ring, are refused"
