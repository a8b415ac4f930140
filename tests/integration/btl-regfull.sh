#!/bin/bash
# More large sends in flight than btl gamma can register for gets
# (mpi/regfull): rank 0 posts 66000 MPI_Isend of 72 KiB before rank 1
# takes any.  The first 65536 go by get; ob1 sends the rest by its
# rendezvous, asks btl gamma for puts, is refused, and sends them in
# fragments.  Every element of every message checked, and the sender's
# counters show both refusals.
. "$(dirname "$0")/cluster-lib.sh" rf
PROG=$MPI_PROGS/regfull
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"

# MTU 9000: 4.7 GB cross in a few seconds.
up "$NAME" --nodes 2 --mtu 9000
ifs=$("$GC" ifaces "$NAME")
export FI_GAMMA_IFACE=$ifs
mpi_ompi
out=$(timeout -k 10 600 "${MPI_CMD[@]}" -np 2 --oversubscribe -x FI_GAMMA_IFACE \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$ifs" \
	--mca btl_gamma_verbose 10 "$PROG" 2>&1)
rc=$?
echo "$out" | grep -E '^(ok|FAIL|done)|gets: |refused' | head -20
[ $rc -eq 0 ] || fail "regfull: mpirun exited $rc: $(tail -20 <<<"$out")"
grep -q '^done: 1 items, 0 failed$' <<<"$out" || fail "regfull: no clean summary: $(tail -20 <<<"$out")"
# Rank 0 refused registrations and puts, and still served gets.
grep -Eq 'registrations refused \(all 65536 taken\) [1-9][0-9]*, puts refused [1-9][0-9]*$' <<<"$out" ||
	fail "regfull: no rank refused both a registration and a put"
grep -Eq 'gets: 0 done, 0 failed; served [1-9][0-9]*, refused 0$' <<<"$out" ||
	fail "regfull: the sender served no gets, or refused one"
ok "66000 sends of 72 KiB in flight over btl gamma: past its 65536 registrations they went by rendezvous and fragments, every element verified"
