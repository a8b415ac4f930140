#!/bin/bash
# Under load: 16 ranks on 4 nodes (4 per node, btl gamma between nodes, vader
# inside) in message storms: mpi/storm (every rank to every rank, small
# messages, MPI ordering checked) and collectives (alltoall(v) of large
# buffers), every byte verified by the programs; no peer declared failed and
# every rank's peak RSS bounded (experiments/faults/gamma-faults --storm --quick).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (bridges, namespaces, tc)"; exit 77; }
command -v clang >/dev/null || { echo "SKIP: clang not found (builds the eBPF fault injector)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
for d in "$PWD/../npb-runs/bin" "$top/npb-runs/bin"; do
	[ -z "${NPB_BINDIR:-}" ] && [ -x "$d/cg" ] && export NPB_BINDIR=$d
done
# make check runs in the build tree's tests/: the MPI programs are in ../mpi.
[ -x "$PWD/../mpi/storm" ] && export MPI_BINDIR=$PWD/../mpi
[ -x "${MPI_BINDIR:-$top/mpi}/storm" ] || { echo "FAIL: mpi/storm not built (make check builds it)"; exit 1; }
# a bound for a hang, not for speed: 2 runs of up to 300 s each (gamma-faults)
timeout -k 10 600 "$top/experiments/faults/gamma-faults" --storm --quick
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || echo "FAIL: experiments/faults/gamma-faults --storm exited $rc"
exit $rc
