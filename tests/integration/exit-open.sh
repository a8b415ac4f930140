#!/bin/bash
# A process that exits with gamma busy and nothing closed (an aborting MPI
# rank, a program returning from main) must exit cleanly. libfabric unloads
# the provider at exit; its progress thread, retransmitting to a silent
# port, must be stopped before that. A dlclose that lingers 200 ms after
# the unload (tools/dlclose-linger.so) turns the race, about one exit in a
# hundred without it, into a fault on every run; gm-exitopen must exit 0.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILT=${GM_TESTS_BUILDDIR:-$(pwd)}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (creates a veth pair)"; exit 77; }
. "$top/tools/gamma-env.sh"
prog=$BUILT/tools/gm-exitopen
shim=$BUILT/tools/.libs/dlclose-linger.so
[ -x "$prog" ] && [ -e "$shim" ] || fail "$prog or $shim not built (make check builds them)"

a=gex$$a b=gex$$b
trap 'ip link del "$a" 2>/dev/null' EXIT
ip link add "$a" type veth peer name "$b" && ip link set "$a" up && ip link set "$b" up || exit 1

for i in $(seq 10); do
	out=$(LD_PRELOAD=$shim FI_GAMMA_PROGRESS_IDLE=1 FI_GAMMA_RTO=200 timeout -k 5 60 "$prog" "$a" 16 2>&1)
	rc=$?
	[ $rc = 0 ] || fail "run $i: exit status $rc (139: SIGSEGV at exit): $out"
	grep -q '^sent 16$' <<<"$out" || fail "run $i: the sends did not go: $out"
	grep -q '^dlclose-linger: lingering$' <<<"$out" || fail "run $i: the provider was never unloaded: $out"
done
echo "ok: 10 exits with 16 sends unacknowledged and the domain open: no fault after the provider was unloaded"
