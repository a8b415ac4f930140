#!/bin/bash
# Issue #16: a rail dies in the middle of an NPB kernel.  Two nodes (one
# namespace each) with two rails; one multi-rail btl gamma module per rank
# (btl_gamma_if_include n0+n0b).  At node 1's rail 0 switch port an eBPF
# filter (tests/tools/gm-cut-after.bpf.c) passes the first $CUT gamma frames
# each way and drops every later one, so the rail dies once the kernel has
# used it, whatever the machine's speed: CG class W sends far more than
# that.  The kernel must verify, the ranks must count the failover, and no
# peer may fail.  mpirun's own TCP runs on rail 0's subnet and passes.
. "$(dirname "$0")/cluster-lib.sh" nc
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v clang >/dev/null || skip "clang not found (builds the eBPF filter)"
bindir=
for d in "$BUILT/../npb-runs/bin" "$top/npb-runs/bin"; do
	[ -z "$bindir" ] && [ -x "$d/cg" ] && bindir=$d
done
[ -n "$bindir" ] || fail "NPB kernels not built (make builds npb-runs/bin)"
. "$top/tools/gamma-env.sh"

CUT=${GM_RAIL_CUT_AFTER:-400}
moved=
obj=$WORK/cut.o
clang -O2 -target bpf -I/usr/include/"$(gcc -print-multiarch 2>/dev/null)" -DCUT_AFTER="$CUT" \
	-c "$top/tests/tools/gm-cut-after.bpf.c" -o "$obj" || fail "cannot compile the eBPF filter"

up "$NAME" --nodes 2 --netns --rails 2
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
n=gc-$NAME-n
port=gc-$NAME-p1
tc qdisc add dev "$port" clsact &&
	tc filter add dev "$port" ingress bpf da obj "$obj" sec tc &&
	tc filter add dev "$port" egress bpf da obj "$obj" sec tc ||
	fail "cannot attach the filter at $port"

FI_GAMMA_STATS=1 timeout -k 10 300 "${MPI_CMD[@]}" -np 2 \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "${n}0+${n}0b,${n}1+${n}1b" \
	-x FI_GAMMA_STATS "$bindir/cg" W >"$WORK/job.out" 2>&1
rc=$?
out=$(cat "$WORK/job.out")
[ $rc -eq 0 ] || fail "cg W exited $rc with rail 0 cut: $(tail -30 <<<"$out")"
grep -q 'Verification    =               SUCCESSFUL' <<<"$out" ||
	fail "cg W did not verify with rail 0 cut: $(tail -30 <<<"$out")"
grep '^gamma stats ' <<<"$out" | grep -v 'peers failed 0;' && fail "a peer failed although rail 1 worked"
fo=$(grep -E "^gamma msg stats ${n}[01]\+${n}[01]b " <<<"$out" | grep -o 'rail failovers [0-9]*' | paste -sd,)
grep -q 'rail failovers [1-9]' <<<"$fo" ||
	fail "no failover counted (did cg W send fewer than $CUT frames each way on rail 0?): $(grep '^gamma msg stats' <<<"$out")"
# Each node: its rail 0 failed and its frames moved; rail 1 carried the rest.
for i in 0 1; do
	grep -qE "^gamma stats ${n}$i: .*rails failed 1 frames moved [1-9]" <<<"$out" ||
		fail "node $i did not count rail 0 failed and frames moved: $(grep "^gamma stats ${n}$i:" <<<"$out")"
	rx1=$(sed -nE "s/^gamma stats ${n}${i}b: .* rx ([0-9]+) frames.*/\1/p" <<<"$out")
	[ "${rx1:-0}" -gt "$CUT" ] || fail "rail 1 of node $i took in only ${rx1:-no} frames"
	moved="$moved node $i: $(grep -oE 'frames moved [0-9]+' <<<"$(grep "^gamma stats ${n}$i:" <<<"$out")"), rail 1 rx $rx1 frames;"
done
ok "cg W verified with node 1's rail 0 cut after $CUT gamma frames each way: $fo;$moved $(grep -m1 'Time in seconds' <<<"$out" | tr -s ' ')"
