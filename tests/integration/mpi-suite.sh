#!/bin/bash
# The project's MPI suite (mpi/) over btl gamma, in both layouts of the
# virtual cluster, on 2 and 4 ranks, clean and under 2% frame loss; and a
# rank killed mid-exchange ends the job instead of hanging it.
#   flat:  one namespace, one interface per rank, --mca btl self,gamma, so
#          every byte between ranks crosses gamma;
#   netns: two "hosts", two ranks each, --mca btl self,vader,gamma.
. "$(dirname "$0")/cluster-lib.sh" ms
SUITE=$MPI_PROGS
[ -x "$SUITE/p2p" ] || fail "$SUITE/p2p not built (make check builds the suite)"
command -v mpirun >/dev/null || skip "mpirun not installed"
. "$top/tools/gamma-env.sh"

# suite LABEL RUN-SUITE-ARGS... -- MPIRUN-ARGS...: the launcher is the
# recipe's (MPI_CMD, tools/lib/mpi.sh), its options in MPIRUN-ARGS.
suite() {
	local label=$1
	shift
	echo "== $label"
	# --timeout: p2p under 2% loss took 99 s at load 20, near --quick's 120 s
	"$top/mpi/run-suite.sh" --bindir "$SUITE" --mpirun "${MPI_CMD[0]}" --timeout 600 "$@" \
		>"$WORK/suite.out" 2>&1
	local rc=$?
	cat "$WORK/suite.out"
	[ $rc -eq 0 ] || fail "MPI suite over btl gamma ($label) failed"
	grep -Eq '^[0-9]+ passed, 0 failed$' "$WORK/suite.out" || fail "no summary line ($label)"
}

# Flat layout: 4 interfaces in this namespace; local rank i takes interface i mod 4.
up "${NAME}f" --nodes 4
ifs=$("$GC" ifaces "${NAME}f")
mpi_ompi
# shellcheck disable=SC2054 # commas: Open MPI's lists
flat=("${MPI_CMD[@]:1}" --oversubscribe --mca pml ob1 --mca btl self,gamma
	--mca btl_gamma_if_include "$ifs" --mca osc pt2pt)
suite "flat, 2 ranks" --np 2 --quick --only "p2p matching" -- "${flat[@]}"
suite "flat, 4 ranks" --np 4 --quick -- "${flat[@]}"

# netns layout: 2 hosts x 2 slots, shared memory inside a host, gamma between.
up "${NAME}n" --nodes 2 --netns
mpi_cluster "${NAME}n" --slots 2 || fail "$CLUSTER_ERROR"
# shellcheck disable=SC2054 # commas: Open MPI's lists
netns=("${MPI_CMD[@]:1}" --mca pml ob1 --mca btl self,vader,gamma --mca osc pt2pt)
suite "netns, 2 ranks (one per host)" --np 2 --quick --only "p2p matching" -- --map-by node "${netns[@]}"
suite "netns, 4 ranks" --np 4 --quick -- --map-by node "${netns[@]}"

# 2% loss on every link end (a frame between two nodes crosses two).
up "${NAME}l" --nodes 2 --netns --loss 2%
mpi_cluster "${NAME}l" --slots 2 || fail "$CLUSTER_ERROR"
# shellcheck disable=SC2054 # commas: Open MPI's lists
lossy=("${MPI_CMD[@]:1}" --mca pml ob1 --mca btl self,vader,gamma --mca osc pt2pt)
suite "netns, 4 ranks, 2% loss" --np 4 --quick --only "p2p storm" -- --map-by node "${lossy[@]}"

# A rank that dies must end the job, not hang it.
echo "== killed rank"
"$top/mpi/run-die.sh" --bindir "$SUITE" --mpirun "${MPI_CMD[0]}" --np 2 --modes "kill" \
	--timeout 90 -- --map-by node "${netns[@]}" >"$WORK/die.out" 2>&1
rc=$?
cat "$WORK/die.out"
[ $rc -eq 0 ] || fail "a killed rank did not end the job cleanly"
ok "MPI suite over btl gamma: both layouts, 2 and 4 ranks, 2% loss, killed rank"
