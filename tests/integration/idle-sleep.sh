#!/bin/bash
# Idle ranks sleep instead of spinning, and the first frame wakes them:
# btl_gamma_idle_block (auto: with mpi_yield_when_idle and one rank per
# host) for ob1 over btl gamma, FI_GAMMA_IDLE_SLEEP for mtl/ofi over the
# provider.  mpi/idle withholds each message until the waiting rank
# is seen asleep (never measures time), then checks every byte; with
# btl_gamma_idle_block=no the same wait must never see it asleep (--wait-s 3
# of looking), so the condition is the feature's, not the kernel's.
. "$(dirname "$0")/cluster-lib.sh" is
PROG=$MPI_PROGS/idle
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"
OK='^ok: 3 rounds, rank 1 asleep in MPI_Recv each time, every byte checked$'

up "$NAME" --nodes 2 --netns
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
run()
{
	timeout -k 10 240 "${MPI_CMD[@]}" -np 2 --map-by node --mca mpi_yield_when_idle 1 "$@" 2>&1
}
BTL=(--mca pml ob1 --mca btl self,gamma)

out=$(run "${BTL[@]}" "$PROG")
rc=$?
echo "$out" | grep -v '^\[' | head -20
[ $rc -eq 0 ] && grep -q "$OK" <<<"$out" || fail "btl gamma: no verified sleeping rounds (rc $rc): $out"
echo "ok: btl gamma (idle_block auto): rank 1 slept in MPI_Recv and got 3 x 1 MiB intact"

out=$(run "${BTL[@]}" --mca btl_gamma_idle_block no "$PROG" --wait-s 3)
rc=$?
[ $rc -ne 0 ] && grep -q '^FAIL: rank 1 (pid [0-9]*) never slept in MPI_Recv within 3 s (state R)$' <<<"$out" ||
	fail "with btl_gamma_idle_block=no the waiting rank was seen asleep (rc $rc): $out"
echo "ok: btl gamma (idle_block no): the spinning rank is never seen asleep"

out=$(FI_GAMMA_IDLE_SLEEP=10 run -x FI_GAMMA_IDLE_SLEEP --mca pml cm --mca mtl ofi \
	--mca mtl_ofi_provider_include gamma "$PROG")
rc=$?
echo "$out" | grep -v '^\[' | head -20
[ $rc -eq 0 ] && grep -q "$OK" <<<"$out" || fail "mtl ofi: no verified sleeping rounds (rc $rc): $out"
echo "ok: mtl ofi (FI_GAMMA_IDLE_SLEEP=10): rank 1 slept in fi_cq_read and got 3 x 1 MiB intact"
ok "idle ranks sleep in the provider and wake for their messages (btl and mtl); spinning ranks never sleep"
