#!/bin/bash
# npb-runs/run, the project's main job, end to end on a small cluster:
# `--quick --nodes 2 --bench is,cg` (class S over gamma and over Open MPI
# ob1+tcp) must finish, print its table, write a CSV whose header is exact and
# whose every row is verified, a CSV copy, a real PNG, and leave no cluster
# behind; bad input is refused before anything is made, and an interrupted
# run (Ctrl-C) still tears its cluster down.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
RUN=$top/npb-runs/run

fail()
{
	echo "FAIL: $*"
	exit 1
}
ok() { echo "ok: $*"; }

# Bad input: a clear message, exit 2, nothing created (no root needed).
out=$("$RUN" --bench xx 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "unknown benchmark 'xx'" <<<"$out" || fail "--bench xx: exit $rc, '$out'"
out=$("$RUN" --nodes 0 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q -- "--nodes needs a whole number" <<<"$out" || fail "--nodes 0: exit $rc, '$out'"
ok "bad input refused with a message"

# Which official NPB tree --npb-dir picks (no NPB download: fake trees with
# NPB 3.4's layout). A checkout holding NPB3.4-MZ/NPB3.4-MZ-MPI beside
# NPB3.4-MPI must give NPB3.4-MPI; the multi-zone tree alone, or named
# directly, gives nothing (it used to be taken, and every build failed).
SEL=$(mktemp -d "${TMPDIR:-/tmp}/npbsel.XXXXXX")
trap 'rm -rf "$SEL"' EXIT
fake_npb()
{
	mkdir -p "$1/config" "$1/sys" && : >"$1/config/make.def.template" && : >"$1/Makefile"
}
# pick DIR: what npb_find_source prints for --npb-dir DIR.
pick()
{
	(npb_dir=$1 npb_tar='' ME=test build=$SEL
		say() { :; }
		. "$top/npb-runs/npb-official.sh"
		npb_find_source)
}
fake_npb "$SEL/both/NPB3.4-MZ/NPB3.4-MZ-MPI"
fake_npb "$SEL/both/NPB3.4-MPI"
fake_npb "$SEL/mz/NPB3.4-MZ/NPB3.4-MZ-MPI"
[ "$(pick "$SEL/both")" = "$SEL/both/NPB3.4-MPI" ] || fail "checkout with MZ and MPI: picked '$(pick "$SEL/both")'"
[ "$(pick "$SEL/both/NPB3.4-MPI")" = "$SEL/both/NPB3.4-MPI" ] || fail "NPB3.4-MPI given directly not taken"
pick "$SEL/mz" >/dev/null && fail "multi-zone only: picked '$(pick "$SEL/mz")'"
pick "$SEL/mz/NPB3.4-MZ/NPB3.4-MZ-MPI" >/dev/null && fail "NPB3.4-MZ-MPI given directly was taken"
ok "--npb-dir picks NPB3.4-MPI beside NPB3.4-MZ, never the multi-zone tree"
rm -rf "$SEL"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: npb-runs/run needs root (network namespaces)"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
command -v gnuplot >/dev/null || { echo "SKIP: gnuplot not installed"; exit 77; }

# The build tree is the parent of the cwd automake runs tests in.
build=${GAMMA_BUILD_DIR:-$(cd .. && pwd)}
[ -x "$build/npb-runs/bin/is" ] || build=$top
[ -x "$build/npb-runs/bin/is" ] || fail "kernels not built (make in npb-runs)"
export GAMMA_BUILD_DIR=$build

# An already built bin/ (a site's own NPB build): found in DIR or DIR/bin,
# each program assigned to the MPI it is linked with, marked site-bin.
SEL=$(mktemp -d "${TMPDIR:-/tmp}/npbsel.XXXXXX")
mkdir -p "$SEL/site/bin"
cp "$build/npb-runs/bin/is" "$SEL/site/bin/is.S.x"
got=$(npb_dir=$SEL/site bench_list=(is cg) class_list=(S)
	say() { :; }
	declare -A prog_path=() prog_from=()
	. "$top/npb-runs/npb-official.sh"
	d=$(npb_find_bin) && npb_use_bin "$d" &&
		echo "$d ${prog_path[openmpi.is.S]:-} ${prog_from[openmpi.is.S]:-} ${prog_path[openmpi.cg.S]:-none}")
[ "$got" = "$SEL/site/bin $SEL/site/bin/is.S.x site-bin none" ] || fail "site bin/: '$got'"
rm -rf "$SEL"
ok "--npb-dir with an already built bin/: IS S taken as Open MPI's, CG S left to build"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/npbrun.XXXXXX")
bg=
cleanup()
{
	[ -n "$bg" ] && kill "$bg" 2>/dev/null && wait "$bg" 2>/dev/null
	rm -rf "$WORK" "$SEL"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# residue NAME: what is left of cluster NAME.
residue()
{
	{
		ip -br link | awk '{print $1}' | grep -F -- "gc-$1-"
		ip netns list | grep -F -- "gc-$1-"
		ls -d "/run/gamma-cluster/$1" 2>/dev/null
	} | sort
}

res=$WORK/res
timeout 300 "$RUN" --quick --nodes 2 --bench is,cg --no-setup --results "$res" --csv "$WORK/copy.csv" \
	>"$WORK/out" 2>&1
rc=$?
cat "$WORK/out"
[ $rc -eq 0 ] || fail "npb-runs/run --quick exited $rc"

# The table: one verified row per benchmark and transport.
grep -q '^bench class ranks  transport' "$WORK/out" || fail "no table header in the output"
for b in IS CG; do
	for t in gamma ompi-tcp; do
		grep -Eq "^$b +S +2 +$t +[0-9.]+ +[0-9.]+ +SUCCESSFUL " "$WORK/out" ||
			fail "table has no verified row for $b S $t"
	done
done
ok "table printed with verified rows"

csv=$res/results.csv
[ "$(head -1 "$csv")" = "bench,class,ranks,transport,time_s,mops,verified" ] ||
	fail "CSV header is '$(head -1 "$csv")'"
[ "$(tail -n +2 "$csv" | wc -l)" -eq 4 ] || fail "CSV has $(tail -n +2 "$csv" | wc -l) rows, expected 4"
while IFS=, read -r b c r t tm mo v; do
	[ "$c" = S ] && [ "$r" = 2 ] || fail "CSV row $b,$c,$r,$t: expected class S on 2 ranks"
	[ "$v" = yes ] || fail "CSV row $b $t not verified: $v"
	[[ $tm =~ ^[0-9]+\.[0-9]+$ ]] && [[ $mo =~ ^[0-9]+\.[0-9]+$ ]] || fail "CSV row $b $t: time '$tm' Mop/s '$mo'"
	# The verification came from the kernel's own report in its log.
	grep -qx ' Verification    =               SUCCESSFUL' "$res/logs/$b.S.$t.1.log" ||
		fail "logs/$b.S.$t.1.log has no SUCCESSFUL verification"
	grep -q "Time in seconds = *$tm\$" "$res/logs/$b.S.$t.1.log" ||
		fail "CSV time $tm of $b $t is not the one its log printed"
done < <(tail -n +2 "$csv")
cmp -s "$csv" "$WORK/copy.csv" || fail "--csv copy differs from results.csv"
ok "CSV: exact header, 4 rows, all verified, matching the logs; --csv copy identical"

png=$res/chart.png
[ -s "$png" ] || fail "no chart.png (or empty)"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "chart.png is not a PNG"
ok "chart.png is a PNG of $(stat -c %s "$png") bytes"

name=$(awk '/^cluster:/ {sub(/,$/, "", $2); print $2}' "$res/run.txt")
[ -n "$name" ] || fail "run.txt names no cluster"
[ -z "$(residue "$name")" ] || fail "cluster $name left behind: $(residue "$name")"
ok "cluster $name torn down"

# The official path on a checkout holding NPB3.4-MPI and NPB3.4-MZ whose
# builds all fail (a fake tree: no NPB download): the rows say so, the table
# is printed, and no chart is attempted (gnuplot cannot draw no data).
fake_npb "$WORK/npb/NPB3.4-MZ/NPB3.4-MZ-MPI"
fake_npb "$WORK/npb/NPB3.4-MPI"
printf 'is:\n\t@echo "this is the fake NPB3.4-MPI"; false\n' >"$WORK/npb/NPB3.4-MPI/Makefile"
timeout 120 "$RUN" --npb-dir "$WORK/npb" --quick --nodes 2 --bench is --no-setup --results "$WORK/res3" \
	>"$WORK/out3" 2>&1
rc=$?
cat "$WORK/out3"
[ $rc -eq 0 ] || fail "npb-runs/run on a tree whose builds fail exited $rc"
grep -q "official NPB source: $WORK/npb/NPB3.4-MPI\$" "$WORK/out3" || fail "did not pick NPB3.4-MPI"
grep -Eq '^IS +S +2 +gamma +- +- +error: (build failed|no openmpi)' "$WORK/out3" || fail "no build-failure row"
grep -q 'no chart: no run verified' "$WORK/out3" || fail "no 'no chart' message"
grep -q 'gnuplot failed' "$WORK/out3" && fail "gnuplot was run without data"
[ ! -e "$WORK/res3/chart.png" ] || fail "chart.png made without data"
ok "every build failed: error rows, table printed, no chart and no gnuplot error"

# Ctrl-C in the middle: the run says so and removes its cluster. Job control
# gives the background run its own process group with SIGINT not ignored.
# When this test itself started with SIGINT ignored (make run in the
# background), no child can catch it: then SIGTERM, the same trap's other way.
sig=INT want=130 said=interrupted
if (($(printf '%d' "0x$(awk '/^SigIgn:/ {print $2}' /proc/$$/status)") & 2)); then
	sig=TERM want=143 said=terminated
fi
set -m
"$RUN" --quick --nodes 2 --bench is --reps 50 --no-setup --results "$WORK/res2" >"$WORK/out2" 2>&1 &
bg=$!
set +m
for _ in $(seq 600); do
	grep -qs '\[1/' "$WORK/out2" && break
	kill -0 "$bg" 2>/dev/null || break
	sleep 0.1
done
grep -q '\[1/' "$WORK/out2" || { cat "$WORK/out2"; fail "the run never started its first benchmark"; }
name=$(awk '/^cluster:/ {sub(/,$/, "", $2); print $2}' "$WORK/res2/run.txt")
kill -"$sig" "$bg"
for _ in $(seq 600); do
	kill -0 "$bg" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$bg" 2>/dev/null && fail "the run did not stop within 60 s of SIG$sig"
wait "$bg"
rc=$?
bg=
cat "$WORK/out2"
[ $rc -eq $want ] || fail "run stopped by SIG$sig exited $rc, expected $want"
grep -q "$said" "$WORK/out2" || fail "run stopped by SIG$sig did not say '$said'"
[ -n "$name" ] && [ -z "$(residue "$name")" ] || fail "interrupted run left cluster '$name': $(residue "$name")"
ok "SIG$sig in the middle: exit $want, cluster $name torn down"
