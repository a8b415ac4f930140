#!/bin/bash
# Issue #16: every rail of an MPI job cut at once.  A verified ring
# (mpi/until-stop) over one multi-rail btl gamma module per node
# (btl_gamma_if_include n0+n0b,n1+n1b), then, once it has verified a round,
# gamma frames dropped both ways at node 1's ports of both rails (mpirun's
# own TCP passes, so that it can end the job).  No rail is left to fail
# over to: the job must end soon after FI_GAMMA_PEER_TIMEOUT (2 s here)
# with btl gamma's error naming the peer, its host and its address on both
# rails (gamma://MAC/PORT+MAC/PORT), mpirun must exit
# non-zero, and nothing may hang or pass for a success.
. "$(dirname "$0")/cluster-lib.sh" md
FI_GAMMA_PEER_TIMEOUT=2000 RING_X='-x FI_GAMMA_PEER_TIMEOUT' rails_ring
r0=$(cat "$READY")
cut_gamma "gc-$NAME-p1" "gc-$NAME-p1b"
t0=$SECONDS
ended() { ! kill -0 "$JOB" 2>/dev/null; }
wait_for -t 60 '' ended || fail "the job still runs 60 s after every rail was cut: $(tail -30 "$WORK/job.out")"
took=$((SECONDS - t0))
wait $JOB
rc=$?
BGPIDS=
out=$(cat "$WORK/job.out")
[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the job hung until the test's timeout (rc $rc): $(tail -30 <<<"$out")"
[ $rc -ne 0 ] || fail "mpirun exited 0 although every rail was cut: $(tail -30 <<<"$out")"
grep -q 'until-stop: [0-9]* rounds verified' <<<"$out" && fail "the job ended as if nothing happened: $out"
# "btl gamma: peer [[JOB,1],1] on gc-NAME-n1 unreachable: WHY", from either rank.
err=$(grep -Em1 "btl gamma: peer \[\[[0-9]+,[0-9]+\],[01]\] on ${n}[01] unreachable: " <<<"$out") ||
	fail "no error naming the peer (rc $rc): $(tail -40 <<<"$out")"
# Its help text names the rails it gave up on and the peer's address on them.
grep -Eq "^ +Interface: +${n}[01]\+${n}[01]b$" <<<"$out" || fail "the error names no multi-rail interface: $out"
grep -Eq '^ +Peer address: +gamma://[0-9a-f:]{17}/[0-9]+\+[0-9a-f:]{17}/[0-9]+$' <<<"$out" ||
	fail "the error names no peer address on both rails: $out"
[ "$took" -le 30 ] || fail "the job took ${took}s to end after every rail was cut (peer timeout 2 s)"
grep -E 'rail [0-9] to fi_addr|btl gamma: peer|Interface:|Peer address:' <<<"$out"
ok "every rail cut after round $r0: mpirun exited $rc ${took}s later; ${err#*btl gamma: }"
