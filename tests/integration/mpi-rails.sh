#!/bin/bash
# Issue #16: an MPI job over two rails. Two nodes (one namespace each) with
# two links each on two bridges; btl gamma opens one module per node over
# both (btl_gamma_if_include n0+n0b: one multi-rail provider domain), and
# the provider stripes the 1 MiB fragments of 1 MiB messages over the
# rails in chunks. Every element of every message is checked
# (mpi/integrity: both directions at once, broadcast, a derived datatype,
# a sender refilling its buffer): the provider completes a peer's
# messages in send order, so ob1 unpacks derived types correctly however
# the bytes travelled. FI_GAMMA_STATS must show each rail of each node
# taking in payload, not just handshakes, and the receivers' pulls striped.
. "$(dirname "$0")/cluster-lib.sh" mr
PROG=$MPI_PROGS/integrity
[ -x "$PROG" ] || fail "$PROG not built (make check builds the MPI suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"

up "$NAME" --nodes 2 --netns --rails 2
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
n=gc-$NAME-n
ifs="${n}0+${n}0b,${n}1+${n}1b"
iters=${GM_INTEGRITY_ITERS:-10}
FI_GAMMA_STATS=1 timeout -k 10 300 "${MPI_CMD[@]}" -np 2 \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$ifs" -x FI_GAMMA_STATS \
	"$PROG" --iters "$iters" >"$WORK/job.out" 2>&1
rc=$?
grep -E '^(ok|error|done)' "$WORK/job.out" | head -20
[ $rc -eq 0 ] || fail "mpirun exited $rc: $(tail -20 "$WORK/job.out")"
grep -q '^done: 4 items, 0 failed$' "$WORK/job.out" || fail "no clean summary: $(tail -20 "$WORK/job.out")"
# One module per node: one endpoint, over both rails.
[ "$(grep -c '^gamma msg stats ' "$WORK/job.out")" = 2 ] ||
	fail "not one endpoint per rank: $(grep '^gamma msg stats ' "$WORK/job.out")"
grep '^gamma msg stats ' "$WORK/job.out" | grep -v 'striped pulls [1-9]' &&
	fail "a rank pulled nothing in chunks over the rails"

# Bytes each rail of a node received. Each direction moves 3 x iters MiB or
# more; a rail that only carried connection setup takes in a few KiB.
min=$((1 << 20))
for i in 0 1; do
	for l in "" b; do
		d=gc-$NAME-n$i$l
		b=$(sed -nE "s/^gamma stats $d: .* rx [0-9]+ frames ([0-9]+) B.*/\1/p" "$WORK/job.out")
		[ -n "$b" ] || fail "no gamma stats for $d: was rail ${l:-0} unused?"
		[ "$b" -ge $min ] || fail "$d received only $b B: the rail carried no payload"
		echo "$d: rx $b B"
	done
done
ok "1 MiB MPI_INT messages (contiguous and derived) over one 2-rail module per rank, every element verified, both rails of both nodes carried payload; $(grep -o 'striped bytes by rail .*' "$WORK/job.out" | paste -sd,)"
