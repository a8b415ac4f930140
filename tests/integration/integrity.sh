#!/bin/bash
# Issue #19: 1 MiB MPI_INT messages over btl gamma, every element checked
# (mpi/integrity): both directions at once, broadcast, derived types
# whose fragments Open MPI misplaces when they arrive out of order, and a
# sender that rewrites its buffer the moment MPI_Send returns.  Flat layout,
# so every byte between the ranks crosses gamma: contiguous messages by btl
# gamma's get (ob1's RGET), which must have served them all, the derived
# types in fragments.
. "$(dirname "$0")/cluster-lib.sh" it
PROG=$MPI_PROGS/integrity
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"

up "$NAME" --nodes 4
ifs=$("$GC" ifaces "$NAME")
# Only this cluster's interfaces: the provider lists at most 32, and a busy
# machine may have more.
export FI_GAMMA_IFACE=$ifs
mpi_ompi
for np in 2 4; do
	out=$(timeout -k 10 300 "${MPI_CMD[@]}" -np $np --oversubscribe \
		-x FI_GAMMA_IFACE -x FI_GAMMA_STATS=1 \
		--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$ifs" \
		--mca btl_gamma_verbose 10 \
		"$PROG" --iters "${GM_INTEGRITY_ITERS:-20}" 2>&1)
	rc=$?
	echo "$out" | grep -v '^ *$' | head -40
	[ $rc -eq 0 ] || fail "integrity on $np ranks: mpirun exited $rc"
	grep -q '^done: 4 items, 0 failed$' <<<"$out" || fail "integrity on $np ranks: no clean summary"
	grep -q 'gamma stats' <<<"$out" || fail "integrity on $np ranks: no gamma stats: gamma unused?"
	gets=$(grep -E 'btl gamma: .*: gets: ' <<<"$out")
	grep -Eq 'gets: [1-9][0-9]* done' <<<"$gets" || fail "integrity on $np ranks: no get done: $gets"
	grep -Ev 'gets: [0-9]+ done, 0 failed; served [0-9]+, refused 0$' <<<"$gets" &&
		fail "integrity on $np ranks: a get failed or was refused"
done
ok "1 MiB MPI_INT sequences over btl gamma, 2 and 4 ranks, every element verified"
