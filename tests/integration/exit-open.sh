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
WORK_OUT=$(mktemp /tmp/gm-exitopen.XXXXXX)
trap 'ip link del "$a" 2>/dev/null; rm -f "$WORK_OUT"' EXIT
ip link add "$a" type veth peer name "$b" && ip link set "$a" up && ip link set "$b" up || exit 1

for i in $(seq 10); do
	out=$(LD_PRELOAD=$shim FI_GAMMA_PROGRESS_IDLE=1 FI_GAMMA_RTO=200 timeout -k 5 60 "$prog" "$a" 16 2>&1)
	rc=$?
	[ $rc = 0 ] || fail "run $i: exit status $rc (139: SIGSEGV at exit): $out"
	grep -q '^sent 16$' <<<"$out" || fail "run $i: the sends did not go: $out"
	grep -q '^dlclose-linger: lingering$' <<<"$out" || fail "run $i: the provider was never unloaded: $out"
done
echo "ok: 10 exits with 16 sends unacknowledged and the domain open: no fault after the provider was unloaded"

# exit() from a SIGTERM handler that interrupted fi_cq_read inside the
# provider (libinfinipath's handler does this; fabtests' -E runs loaded it):
# the domain lock is held by the exiting thread itself. The exit once
# waited for that lock for ever. SIGTERMs go until the process is gone.
out=$WORK_OUT
for i in $(seq 5); do
	FI_GAMMA_PROGRESS_IDLE=1 FI_GAMMA_RTO=200 "$prog" "$a" 4 signal >"$out" 2>&1 &
	pid=$!
	for _ in $(seq 6000); do grep -q '^polling$' "$out" && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done
	grep -q '^polling$' "$out" || { kill -KILL $pid 2>/dev/null; fail "run $i: never polled: $(cat "$out")"; }
	for k in $(seq 6000); do
		kill -TERM $pid 2>/dev/null || break
		sleep 0.01
	done
	if kill -0 $pid 2>/dev/null; then
		kill -KILL $pid
		wait $pid 2>/dev/null
		fail "run $i: still alive after 6000 SIGTERMs: its exit hangs"
	fi
	wait $pid
	rc=$?
	[ $rc = 3 ] || fail "run $i: exit status $rc, not the handler's 3: $(cat "$out")"
done
echo "ok: 5 exits from a SIGTERM handler that interrupted the provider inside fi_cq_read"
