#!/bin/bash
# A peer that goes silent while the job only waits on it: rank 0's one send
# to rank 1 completed at once (buffered), then gamma frames to and from node
# 1 are dropped at its switch port (TCP, so mpirun and its daemons, still
# pass). No BTL operation is left to fail, yet the job must end with an
# error naming the peer soon after FI_GAMMA_PEER_TIMEOUT, never hang: btl
# gamma keeps a receive directed at each peer that the provider fails when
# the peer stops acknowledging.
. "$(dirname "$0")/cluster-lib.sh" pd
command -v mpirun >/dev/null || skip "mpirun not installed"
mpi_build silent-peer
. "$top/tools/gamma-env.sh"

up "$NAME" --nodes 2 --netns
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
port=gc-$NAME-p1
ready=$WORK/ready
timeout_ms=3000

timeout -k 10 120 "${MPI_CMD[@]}" -np 2 -x FI_GAMMA_PEER_TIMEOUT=$timeout_ms \
	--mca pml ob1 --mca btl self,gamma \
	"$WORK/silent-peer" "$ready" >"$WORK/out" 2>&1 &
job=$!
BGPIDS="$BGPIDS $job"
wait_for $job test -e "$ready" ||
	fail "the job did not get past its first barrier: $WAIT_ERROR: $(cat "$WORK/out")"

# Drop gamma frames both ways at node 1's port.
cut_gamma "$port"
t0=$(date +%s)
rm -f "$ready"
wait $job
rc=$?
BGPIDS=
took=$(($(date +%s) - t0))
out=$(cat "$WORK/out")
[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "the job hung until the test's timeout (rc $rc): $out"
[ $rc -ne 0 ] || fail "the job succeeded although node 1 was cut off: $out"
grep -q 'the link was not cut' <<<"$out" && fail "rank 0 heard from rank 1 across the cut: $out"
grep -q 'btl gamma: peer .* unreachable: no acknowledgement within FI_GAMMA_PEER_TIMEOUT' <<<"$out" ||
	fail "no error naming the peer (rc $rc): $out"
[ "$took" -le 40 ] || fail "the job took ${took}s to end after the cut (peer timeout ${timeout_ms} ms)"
ok "silent peer: job ended (rc $rc) ${took}s after the cut: $(grep -m1 -o 'btl gamma: peer .* unreachable[^;]*' <<<"$out" | cut -c1-150)"
