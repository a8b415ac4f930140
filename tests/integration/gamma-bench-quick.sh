#!/bin/bash
# Smoke test of tools/gamma-bench --quick: on its own fresh virtual cluster,
# every stack (libfabric gamma and tcp, Open MPI btl gamma and btl tcp,
# MPICH over TCP) must run and verify its data, and the report must hold a
# row for each. No timing is asserted: the machine is shared.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$(pwd)/..}
[ -x "$build/tools/gamma-pingpong" ] || build=$top
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth, raw sockets)"
for t in mpicc.openmpi mpicc.mpich mpiexec.hydra /usr/bin/time; do
	command -v "$t" >/dev/null || skip "$t not installed"
done
out=$(mktemp -d /tmp/gamma-bench-test.XXXXXX)
trap 'rm -rf "$out"' EXIT

# a bound for a hang, not for speed (one osu run alone may take 900 s)
GAMMA_BUILD_DIR=$build timeout 1800 "$top/tools/gamma-bench" --quick --out "$out" >"$out/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gamma-bench --quick exited $rc: $(tail -30 "$out/log")"
grep -q '^gamma-bench: every run verified its data$' "$out/log" || fail "no verdict: $(tail "$out/log")"
for st in lf-gamma lf-tcp; do
	for t in lat bw rate; do
		grep -q '^# verified: every byte of [1-9][0-9]* messages' "$out/veth1500.$st.$t.cli" ||
			fail "$st $t: no verified data"
	done
done
for st in mpi-gamma mpi-tcp mpich-tcp; do
	grep -q '^# gm-osu: OK: verified [1-9][0-9]* messages byte for byte' "$out/veth1500.$st.osu" ||
		fail "$st: no verified data"
done
for st in lf-gamma lf-tcp mpi-gamma mpi-tcp mpich-tcp; do
	for t in latency,8 bandwidth,1048576 msgrate,8; do
		grep -q "^veth1500,$st,$t,[0-9.]*," "$out/results.csv" || fail "results.csv lacks $st $t"
	done
done
echo "ok: gamma-bench --quick ran every stack with verified data"
