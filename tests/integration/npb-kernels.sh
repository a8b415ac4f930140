#!/bin/bash
# The project's NPB kernels verify class S against the official values on 1, 2
# and 4 ranks, and a wrong reference value is reported as UNSUCCESSFUL with a
# non-zero exit.
#
# Transport: btl gamma (ob1 over self,gamma, no shared memory), on a flat
# 4-node virtual cluster made for the test: every interface in this namespace,
# and with btl_gamma_if_include listing them local rank i uses interface i, so
# every message between ranks is a gamma frame through the cluster's bridge.
# NPB_MPIRUN_ARGS replaces that (no cluster then), e.g.
#   NPB_MPIRUN_ARGS="--mca pml ob1 --mca btl self,vader,tcp"
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=../../tools/lib/mpi.sh
. "$top/tools/lib/mpi.sh"

fail() { echo "FAIL: $*"; exit 1; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found"; exit 77; }

# The kernels are built into the build tree's npb-runs/bin (the cwd of
# `make check` is the build tree's tests/); fall back to the source tree.
bindir=${NPB_BINDIR:-}
for d in "$PWD/../npb-runs/bin" "$top/npb-runs/bin"; do
	[ -z "$bindir" ] && [ -x "$d/ep" ] && bindir=$d
done
[ -n "$bindir" ] || fail "kernels not built (run make in npb-runs)"

ok_line='Verification    =               SUCCESSFUL'
bad_line='Verification    =             UNSUCCESSFUL'
log=$(mktemp)
cluster=
cleanup()
{
	cluster_down_all
	rm -f "$log"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if [ -n "${NPB_MPIRUN_ARGS:-}" ]; then
	args=$NPB_MPIRUN_ARGS
	echo "transport: $args"
else
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: btl gamma needs root (raw frames, a virtual cluster)"; exit 77; }
	build=${GAMMA_BUILD_DIR:-$(cd "$bindir/../.." && pwd)}
	[ -e "$build/provider/.libs/libgamma-fi.so" ] || fail "gamma provider not built in $build"
	# shellcheck source=../../tools/gamma-env.sh
	GAMMA_BUILD_DIR=$build . "$top/tools/gamma-env.sh"
	name=nk$(($$ % 100000))
	CLUSTER_LOG=$log
	cluster_up "$name" --nodes 4 || fail "$CLUSTER_ERROR"
	cluster=$name
	ifaces=$("$top/tools/gamma-cluster" ifaces "$name") || fail "gamma-cluster ifaces"
	# Four busy-polling ranks share two cores: let idle ranks yield.
	args="--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include $ifaces --mca mpi_yield_when_idle 1"
	echo "transport: btl gamma over $ifaces"
fi
mpi_ompi

# rx_frames I: frames node I's interface has received (flat cluster only).
rx_frames() { cat "/sys/class/net/gc-$cluster-n$1/statistics/rx_packets"; }

# run NP KERNEL ARGS...: runs one kernel; its output is left in $log, status returned.
run() {
	local np=$1
	shift
	# shellcheck disable=SC2086 # $args is a list of mpirun options
	timeout 120 "${MPI_CMD[@]}" -np "$np" --oversubscribe $args "$@" >"$log" 2>&1
}

for k in ep is cg mg; do
	for np in 1 2 4; do
		[ -n "$cluster" ] && before=$(rx_frames $((np - 1)))
		run "$np" "$bindir/$k" S
		rc=$?
		if [ $rc -ne 0 ] || ! grep -qx " $ok_line" "$log"; then
			cat "$log"
			fail "$k class S on $np ranks: exit $rc, not verified"
		fi
		via=
		if [ -n "$cluster" ] && [ "$np" -gt 1 ]; then
			# The last rank's interface received the other ranks' frames.
			got=$(($(rx_frames $((np - 1))) - before))
			[ "$got" -gt 0 ] || { cat "$log"; fail "$k on $np ranks verified, but gc-$cluster-n$((np - 1)) received no frames"; }
			via=" ($got frames into gc-$cluster-n$((np - 1)))"
		fi
		echo "ok: $k S np=$np $(grep -m1 'Time in seconds' "$log" | tr -s ' ')$via"
	done
done

# A wrong reference must fail verification, through either way of giving it.
run 2 "$bindir/cg" S --verify-value 8.5971775
rc=$?
{ [ $rc -ne 0 ] && grep -qx " $bad_line" "$log"; } ||
	{ cat "$log"; fail "cg with a wrong reference value: exit $rc, not UNSUCCESSFUL"; }
echo "ok: cg with a wrong reference value is UNSUCCESSFUL (exit $rc)"

NPB_VERIFY_OVERRIDE=1 run 2 -x NPB_VERIFY_OVERRIDE "$bindir/is" S
rc=$?
{ [ $rc -ne 0 ] && grep -qx " $bad_line" "$log"; } ||
	{ cat "$log"; fail "is with a wrong reference rank: exit $rc, not UNSUCCESSFUL"; }
echo "ok: is with a wrong reference rank is UNSUCCESSFUL (exit $rc)"

# Rank counts NPB does not allow are refused, not run.
run 3 "$bindir/mg" S
rc=$?
{ [ $rc -ne 0 ] && grep -q 'power-of-two' "$log"; } ||
	{ cat "$log"; fail "mg on 3 ranks: exit $rc, no clear refusal"; }
echo "ok: mg refuses 3 ranks"
