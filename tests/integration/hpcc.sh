#!/bin/bash
# A suite nobody here wrote: the HPC Challenge suite (Debian's hpcc) on 4
# ranks, one per node of a --netns cluster, over btl self,gamma, so every
# message between ranks crosses gamma.  HPL, PTRANS, MPIRandomAccess (a
# storm of small messages to every rank) and MPIFFT (all-to-alls) check
# their own results; experiments/conformance/hpcc --quick runs it and
# judges the report.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
out=$("$top/experiments/conformance/hpcc" --quick 2>&1)
rc=$?
echo "$out"
case $rc in
0) grep -Eq '^gamma .* ok$' <<<"$out" || { echo "FAIL: no verdict line for gamma"; exit 1; }
	echo "ok: the HPC Challenge suite passes over btl gamma on 4 nodes" ;;
77) echo "SKIP: $(tail -1 <<<"$out")"; exit 77 ;;
*) echo "FAIL: the HPC Challenge suite over btl gamma"; exit 1 ;;
esac
