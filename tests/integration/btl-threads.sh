#!/bin/bash
# MPI_THREAD_MULTIPLE over btl gamma: one rank on each of the two hosts of
# a --netns cluster, --mca btl self,gamma (nothing else reaches the other
# host), 4 threads per rank each sending and receiving 8 B .. 1 MiB on its
# own communicator or tag at once; mpi/threads checks every byte.
# Both ranks must open gamma with FI_THREAD_SAFE, and the data must have
# crossed the cluster's bridge.
. "$(dirname "$0")/cluster-lib.sh" bt
PROG=$MPI_PROGS/threads
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
ompi_info 2>/dev/null | grep -q 'MPI_THREAD_MULTIPLE: yes' ||
	skip "this Open MPI was built without MPI_THREAD_MULTIPLE"
. "$top/tools/gamma-env.sh"

up "$NAME" --nodes 2 --netns
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
rx0=$(cat "/sys/class/net/gc-$NAME-p1/statistics/tx_bytes")
out=$(timeout -k 10 240 "${MPI_CMD[@]}" -np 2 --map-by node \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_verbose 10 \
	"$PROG" --threads 4 --rounds 4 2>&1)
rc=$?
echo "$out" | grep -v '^\[' | head -40
[ $rc -eq 0 ] || fail "job failed (rc $rc): $(tail -30 <<<"$out")"
grep -q '^ok: MPI_Init_thread provides MPI_THREAD_MULTIPLE$' <<<"$out" ||
	fail "MPI_THREAD_MULTIPLE not provided: $out"
grep -q '^ok: 4 threads per rank x 4 rounds' <<<"$out" || fail "data not verified: $out"
grep -q '^done: 2 items, 0 failed$' <<<"$out" || fail "no clean summary: $out"
[ "$(grep -c 'btl gamma: module on .* threading FI_THREAD_SAFE' <<<"$out")" -eq 2 ] ||
	fail "expected both ranks to open gamma with FI_THREAD_SAFE: $out"
# ob1's pipeline fragments fill whole frames (FI_OPT_GAMMA_MSG_FRAMES): at
# MTU 1500 a frame body holds 1440 B, 1404 of a message in its first frame
# (36 B message header), 1424 in each later one (16 B); 64 KiB + 64 B and
# btl gamma's 8-byte header take 47 frames, which carry 66908 B.
[ "$(grep -c 'btl gamma: module on .* max send 66900 B' <<<"$out")" -eq 2 ] ||
	fail "expected a max send size of 47 whole frames (66900 B) on both ranks: $(grep 'module on' <<<"$out")"
# 4 threads x 4 rounds x 1974044 B towards node 1 (31.6 MB, headers aside), through its bridge port.
rx=$(($(cat "/sys/class/net/gc-$NAME-p1/statistics/tx_bytes") - rx0))
[ "$rx" -ge 31500000 ] || fail "only $rx bytes reached node 1 through the bridge"
ok "MPI_THREAD_MULTIPLE over btl gamma: 4 threads per rank, 8 B .. 1 MiB, every byte checked ($rx bytes to node 1)"
