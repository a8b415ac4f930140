#!/bin/bash
# MPI_Comm_spawn over btl gamma: a parent on node 0 of a --netns cluster of
# three spawns two children, which take the free slots of nodes 1 and 2,
# so every byte between the processes crosses gamma (btl self,gamma).  Each
# job seals its frames with a secret of its own, so this checks that btl
# gamma seals frames to the other job's processes with that job's secret:
# before it did, the jobs' frames were dropped as another job's (bad key)
# and the spawn ended in a peer timeout.  spawn checks 8 B, 64 KiB and
# 4 MiB both ways between every parent and child, and an Allreduce over
# the merged communicator.  The same over mtl ofi (pml cm), where the
# provider carries every message.
. "$(dirname "$0")/cluster-lib.sh" sp
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"
mpicc=${MPICC:-mpicc.openmpi}
command -v "$mpicc" >/dev/null || mpicc=mpicc
"$mpicc" -O2 -o "$WORK/spawn" "$top/mpi/spawn.c" || fail "cannot build spawn"

up "$NAME" --nodes 3 --netns
mpi_cluster "$NAME" --slots 1 || fail "$CLUSTER_ERROR"
ifs=$("$GC" ifaces "$NAME")

out=$(timeout -k 10 180 "${MPI_CMD[@]}" -np 1 --mca pml ob1 --mca btl self,gamma \
	--mca btl_gamma_if_include "$ifs" --mca btl_base_verbose 100 "$WORK/spawn" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "spawn job failed (rc $rc): $(tail -40 <<<"$out")"
grep -q '^spawn: OK: 0 wrong bytes' <<<"$out" || fail "data not verified: $(tail -40 <<<"$out")"
# The parent reaches both children, and each child the parent, over gamma.
for p in '\[\[[0-9]+,2\],0\]' '\[\[[0-9]+,2\],1\]' '\[\[[0-9]+,1\],0\]'; do
	[ "$(grep -Ec "Using gamma btl for send to $p" <<<"$out")" -ge 1 ] ||
		fail "gamma did not carry the traffic to $p: $(grep 'Using' <<<"$out")"
done
ok "MPI_Comm_spawn across three nodes: parent and children exchanged 8 B .. 4 MiB over gamma, verified"

out=$(FI_GAMMA_STATS=1 timeout -k 10 180 "${MPI_CMD[@]}" -np 1 -x FI_GAMMA_STATS \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include gamma "$WORK/spawn" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "spawn job over mtl ofi failed (rc $rc): $(tail -40 <<<"$out")"
grep -q '^spawn: OK: 0 wrong bytes' <<<"$out" ||
	fail "data not verified over mtl ofi: $(tail -40 <<<"$out")"
n=$(grep -c '^gamma stats gc-.*: tx [1-9][0-9]* frames' <<<"$out")
[ "$n" -ge 3 ] || fail "only $n of 3 processes report gamma traffic over mtl ofi: $out"
ok "MPI_Comm_spawn over mtl ofi: the same exchange, every process on gamma"
