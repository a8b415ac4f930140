#!/bin/bash
# Issue #19: 1 MiB MPI_INT messages over btl gamma, every element checked
# (mpi/integrity): both directions at once, broadcast, derived types
# whose fragments Open MPI misplaces when they arrive out of order, and a
# sender that rewrites its buffer the moment MPI_Send returns.  Flat layout,
# so every byte between the ranks crosses gamma: contiguous messages by btl
# gamma's get (ob1's RGET), or in fragments with gets turned off; the
# derived types in fragments.
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
# Contiguous messages by get (the default), then, as npb-runs has ranks that
# share cores do, in fragments (btl_gamma_flags 9: no gets).
for run in "2 13" "4 9"; do
	read -r np flags <<<"$run"
	out=$(timeout -k 10 300 "${MPI_CMD[@]}" -np $np --oversubscribe \
		-x FI_GAMMA_IFACE -x FI_GAMMA_STATS=1 \
		--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$ifs" \
		--mca btl_gamma_flags $flags --mca btl_gamma_verbose 10 \
		"$PROG" --iters "${GM_INTEGRITY_ITERS:-20}" 2>&1)
	rc=$?
	echo "$out" | grep -v '^ *$' | head -40
	[ $rc -eq 0 ] || fail "integrity on $np ranks: mpirun exited $rc"
	grep -q '^done: 4 items, 0 failed$' <<<"$out" || fail "integrity on $np ranks: no clean summary"
	grep -q 'gamma stats' <<<"$out" || fail "integrity on $np ranks: no gamma stats: gamma unused?"
	gets=$(grep -E 'btl gamma: .*: gets: ' <<<"$out")
	echo "$gets"
	[ "$(grep -c . <<<"$gets")" -eq "$np" ] || fail "integrity on $np ranks: not every rank reported its gets"
	if [ "$flags" = 13 ]; then
		grep -Eq 'gets: [1-9][0-9]* done' <<<"$gets" || fail "integrity on $np ranks: no get done"
		grep -Ev 'gets: [0-9]+ done, 0 failed; served [0-9]+, refused 0$' <<<"$gets" &&
			fail "integrity on $np ranks: a get failed or was refused"
	else
		grep -Ev 'gets: 0 done, 0 failed; served 0, refused 0$' <<<"$gets" &&
			fail "integrity on $np ranks: gets without the flag"
	fi
done
ok "1 MiB MPI_INT sequences over btl gamma, every element verified: 2 ranks by get, 4 in fragments"
