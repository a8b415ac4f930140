#!/bin/bash
# The short fault campaign (experiments/faults/gamma-faults --quick): NPB IS and CG class S
# over btl gamma on 4 ranks of a 4-node --netns cluster, first under every
# frame fault at once on the cluster's links (5% loss, 5% duplicates, 1% one-bit
# corruption, 25% reordered through a slow htb class, by the eBPF program
# experiments/faults/gm-faults.bpf.c at the bridge ports' egress), then IS and CG with
# every gamma frame delayed 1 ms +- 0.5 ms by gm-faultwire relays on the node
# uplinks, then a job exchanging verified data until told to stop
# (experiments/faults/gm-mpi-soak.c) with one node's link down for 2 s. Asserts the
# jobs verify and that the provider's counters (FI_GAMMA_STATS) show
# retransmits, duplicates, frames out of order and bad checksums where those
# faults were injected, and that the relays delayed the ranks' frames.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (bridges, namespaces, tc)"; exit 77; }
command -v clang >/dev/null || { echo "SKIP: clang not found (builds the eBPF fault injector)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }
# make check runs in the build tree's tests/: the kernels are in ../npb-runs/bin.
for d in "$PWD/../npb-runs/bin" "$top/npb-runs/bin"; do
	[ -z "${NPB_BINDIR:-}" ] && [ -x "$d/cg" ] && export NPB_BINDIR=$d
done
[ -n "${NPB_BINDIR:-}" ] || { echo "FAIL: NPB kernels not built"; exit 1; }
for f in "$PWD/../experiments/faults/gm-faultwire" "$top/experiments/faults/gm-faultwire"; do
	[ -z "${FW_BIN:-}" ] && [ -x "$f" ] && export FW_BIN=$f
done
[ -n "${FW_BIN:-}" ] || { echo "FAIL: experiments/faults/gm-faultwire not built"; exit 1; }
# a bound for a hang, not for speed: 5 runs of up to 180 s each (gamma-faults)
timeout -k 10 900 "$top/experiments/faults/gamma-faults" --quick --assert --faults "mixed delay linkdown"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 77 ] || echo "FAIL: experiments/faults/gamma-faults --quick exited $rc"
exit $rc
