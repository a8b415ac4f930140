#!/bin/bash
# The project's NPB kernels verify class S against the official values on 1, 2
# and 4 ranks, and a wrong reference value is reported as UNSUCCESSFUL with a
# non-zero exit. NPB_MPIRUN_ARGS picks the transport.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
args=${NPB_MPIRUN_ARGS:---mca pml ob1 --mca btl self,vader,tcp}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

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
trap 'rm -f "$log"' EXIT

# run NP KERNEL ARGS...: runs one kernel; its output is left in $log, status returned.
run() {
	local np=$1
	shift
	# shellcheck disable=SC2086 # $args is a list of mpirun options
	timeout 120 mpirun -np "$np" --oversubscribe --bind-to none $args "$@" >"$log" 2>&1
}

for k in ep is cg mg; do
	for np in 1 2 4; do
		run "$np" "$bindir/$k" S
		rc=$?
		if [ $rc -ne 0 ] || ! grep -qx " $ok_line" "$log"; then
			cat "$log"
			fail "$k class S on $np ranks: exit $rc, not verified"
		fi
		echo "ok: $k S np=$np $(grep -m1 'Time in seconds' "$log" | tr -s ' ')"
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
