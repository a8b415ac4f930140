#!/bin/bash
# A suite nobody here wrote: ScaLAPACK's BLACS tester (Debian's
# scalapack-mpi-test, C interface) on 4 ranks, one per node of a --netns
# cluster, over btl self,gamma, so every message between ranks crosses
# gamma.  It sends, broadcasts and combines every data type in thousands of
# shapes and checks every result itself; experiments/conformance/scalapack
# --quick runs it and judges the output (every group "0 FAILED", the
# auxiliary tests through to BLACS_ABORT).
set -u
. "$(dirname "$0")/conform-lib.sh"
conform_quick scalapack 1 '^xCbtest +gamma .* ok$' \
	"ScaLAPACK's BLACS tester passes over btl gamma on 4 nodes"
