#!/bin/bash
# Smoke test of experiments/perf/gamma-bench --quick: on its own fresh virtual cluster,
# every stack (the raw-frame floor by send and sendmmsg, without and with
# gamma's frame MAC, libfabric gamma and tcp, Open MPI btl gamma and btl
# tcp, MPICH over TCP) must run and verify its data, and the report must
# hold a row for each, the floor's beside gamma's. No timing is asserted:
# the machine is shared.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$(pwd)/..}
[ -x "$build/experiments/pingpong/gamma-pingpong" ] || build=$top
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth, raw sockets)"
for t in mpicc.openmpi mpicc.mpich mpiexec.hydra /usr/bin/time; do
	command -v "$t" >/dev/null || skip "$t not installed"
done
out=$(mktemp -d /tmp/gamma-bench-test.XXXXXX)
trap 'rm -rf "$out"' EXIT

# a bound for a hang, not for speed (one osu run alone may take 900 s)
GAMMA_BUILD_DIR=$build timeout 1800 "$top/experiments/perf/gamma-bench" --quick --out "$out" >"$out/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gamma-bench --quick exited $rc: $(tail -30 "$out/log")"
grep -q '^gamma-bench: every run verified its data$' "$out/log" || fail "no verdict: $(tail "$out/log")"
grep -q '^# verified: [1-9][0-9]* pongs, each with its ping.s repetition and sequence number' \
	"$out/veth1500.floor.lat.cli" || fail "floor lat: no verified pongs: $(tail -3 "$out/veth1500.floor.lat.cli")"
for st in floor floor-mmsg floor-mac floor-mmsg-mac; do
	grep -q '^# verified: every byte of [1-9][0-9]* frames ([1-9][0-9]* bytes) at the receiver' \
		"$out/veth1500.$st.bw.cli" || fail "$st bw: no verified frames: $(tail -3 "$out/veth1500.$st.bw.cli")"
	grep -q ' 0 invalid;' "$out/veth1500.$st.bw.srv" || fail "$st bw: receiver saw invalid frames"
done
grep -q '^veth1500,floor,latency,8,[0-9.]*,us,' "$out/results.csv" || fail "results.csv lacks the floor's latency"
# Messages of several frames (4096 B: 3 frames at MTU 1500), both ways
# verified, without and with the frame MAC.
for st in floor floor-mac; do
	grep -q '^# verified: every byte of [1-9][0-9]* frames ([1-9][0-9]* bytes) of [1-9][0-9]* messages each way' \
		"$out/veth1500.$st.msg.cli" || fail "$st msg: no verified messages: $(tail -3 "$out/veth1500.$st.msg.cli")"
	grep -q 'answered [1-9][0-9]* messages ([1-9][0-9]* frames verified, 0 invalid)' "$out/veth1500.$st.msg.srv" ||
		fail "$st msg: the server verified no message: $(tail -2 "$out/veth1500.$st.msg.srv")"
	grep -q "^veth1500,$st,latency,4096,[0-9.]*,us," "$out/results.csv" ||
		fail "results.csv lacks $st's 4096-byte message latency"
done
grep -q '^# message latency: .* each with gamma.s frame MAC' "$out/veth1500.floor-mac.msg.cli" ||
	fail "floor-mac msg did not carry the MAC: $(head -3 "$out/veth1500.floor-mac.msg.cli")"
grep -Eq '^veth1500 +4096 +\| +[0-9.]+ +[0-9.]+ +- +[0-9.]+ +[0-9.]+ +\| +- +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$out/summary.txt" ||
	fail "summary lacks the 4096-byte row beside the floor: $(cat "$out/summary.txt")"
for t in exchange exch-cold; do
	grep -q "^veth1500,mpi-gamma,$t,9248,[0-9.]*,us," "$out/results.csv" ||
		fail "results.csv lacks btl gamma's $t row"
done
for st in floor floor-mmsg floor-mac floor-mmsg-mac; do
	grep -q "^veth1500,$st,bandwidth,1500,[0-9.]*,MB/s," "$out/results.csv" ||
		fail "results.csv lacks $st bandwidth at frames of MTU 1500"
done
# The floor section: the floor itself at 1.00, gamma with a ratio to it.
grep -Eq '^veth1500 +floor +\| +[0-9.]+ +1500 +1\.00 .*\| +[0-9.]+ +1\.00$' "$out/summary.txt" ||
	fail "summary lacks the floor row: $(cat "$out/summary.txt")"
for st in lf-gamma mpi-gamma; do
	grep -Eq "^veth1500 +$st +\| +[0-9.]+ +1048576 +[0-9.]+ .*\| +[0-9.]+ +[0-9.]+\$" "$out/summary.txt" ||
		fail "summary lacks $st against the floor: $(cat "$out/summary.txt")"
done
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
echo "ok: gamma-bench --quick ran every stack and the raw-frame floor with verified data"
