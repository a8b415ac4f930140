#!/bin/bash
# A suite nobody here wrote: ScaLAPACK's BLACS tester (Debian's
# scalapack-mpi-test, C interface) on 4 ranks, one per node of a --netns
# cluster, over btl self,gamma, so every message between ranks crosses
# gamma.  It sends, broadcasts and combines every data type in thousands of
# shapes and checks every result itself; experiments/conformance/scalapack
# --quick runs it and judges the output (every group "0 FAILED", the
# auxiliary tests through to BLACS_ABORT).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
out=$("$top/experiments/conformance/scalapack" --quick 2>&1)
rc=$?
echo "$out"
case $rc in
0) grep -Eq '^xCbtest +gamma .* ok$' <<<"$out" || { echo "FAIL: no verdict line for xCbtest"; exit 1; }
	echo "ok: ScaLAPACK's BLACS tester passes over btl gamma on 4 nodes" ;;
77) echo "SKIP: $(tail -1 <<<"$out")"; exit 77 ;;
*) echo "FAIL: ScaLAPACK's BLACS tester over btl gamma"; exit 1 ;;
esac
