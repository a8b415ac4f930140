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
mpicc=${MPICC:-mpicc.openmpi}
command -v "$mpicc" >/dev/null || mpicc=mpicc
command -v "$mpicc" >/dev/null || skip "mpicc not installed"
. "$top/tools/gamma-env.sh"
"$mpicc" -O2 -o "$WORK/silent-peer" "$top/mpi/silent-peer.c" || fail "cannot build silent-peer"

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
for _ in $(seq 600); do [ -e "$ready" ] && break; kill -0 $job 2>/dev/null || break; sleep 0.1; done
[ -e "$ready" ] || fail "the job never got past its first barrier: $(cat "$WORK/out")"

# Drop gamma frames both ways at node 1's port: a bpf action returning 2
# (TC_ACT_SHOT) for every frame of the EtherType.
tc qdisc add dev "$port" clsact &&
	tc filter add dev "$port" ingress protocol 0x88b5 prio 1 bpf da bytecode "1,6 0 0 2" &&
	tc filter add dev "$port" egress protocol 0x88b5 prio 1 bpf da bytecode "1,6 0 0 2" ||
	fail "cannot cut gamma frames on $port"
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
