#!/bin/bash
# A suite nobody here wrote: the HPC Challenge suite (Debian's hpcc) on 4
# ranks, one per node of a --netns cluster, over btl self,gamma, so every
# message between ranks crosses gamma.  HPL, PTRANS, MPIRandomAccess (a
# storm of small messages to every rank) and MPIFFT (all-to-alls) check
# their own results; experiments/conformance/hpcc --quick runs it and
# judges the report.
set -u
. "$(dirname "$0")/conform-lib.sh"
conform_quick hpcc 1 '^gamma .* ok$' "the HPC Challenge suite passes over btl gamma on 4 nodes"
