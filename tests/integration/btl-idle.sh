#!/bin/bash
# btl_gamma_idle_block: with mpi_yield_when_idle and one rank per host
# (auto), a rank waiting in MPI_Recv sleeps in the provider's wait object
# instead of spinning, and the first frame wakes it.  tests/mpi/idle
# withholds each message until the waiting rank is seen asleep (never
# measures time), then checks every byte; with btl_gamma_idle_block=no the
# same wait must never see it asleep (--wait-s 3 of looking).
. "$(dirname "$0")/cluster-lib.sh" bi
PROG=$BUILT/mpi/idle
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

up "$NAME" --nodes 2 --netns
hf=$("$GC" hostfile "$NAME") || fail "hostfile"
sub=$("$GC" subnet "$NAME") || fail "subnet"
run()
{
	timeout -k 10 240 mpirun --hostfile "$hf" -np 2 --map-by node --bind-to none \
		--mca plm_rsh_agent "$RSH" --mca oob_tcp_if_include "$sub" \
		-x FI_PROVIDER_PATH -x OMPI_MCA_mca_base_component_path \
		--mca pml ob1 --mca btl self,gamma --mca mpi_yield_when_idle 1 "$@" 2>&1
}
out=$(run "$PROG")
rc=$?
echo "$out" | grep -v '^\[' | head -20
[ $rc -eq 0 ] || fail "job failed (rc $rc): $(tail -30 <<<"$out")"
grep -q '^ok: 3 rounds, rank 1 asleep in MPI_Recv each time, every byte checked$' <<<"$out" ||
	fail "no verified sleeping rounds: $out"

# The control: spinning (idle_block no) is never seen asleep, so the
# condition above is the feature's, not the kernel's.
out=$(run --mca btl_gamma_idle_block no "$PROG" --wait-s 3)
rc=$?
[ $rc -ne 0 ] && grep -q '^FAIL: rank 1 (pid [0-9]*) never slept in MPI_Recv within 3 s (state R)$' <<<"$out" ||
	fail "with btl_gamma_idle_block=no the waiting rank was seen asleep (rc $rc): $out"
ok "idle ranks sleep in the provider (btl_gamma_idle_block auto) and wake for 3 x 1 MiB, every byte checked; spinning ranks never sleep"
