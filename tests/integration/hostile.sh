#!/bin/bash
# Hostile frames during an MPI job: a 2-rank job over btl gamma on a 2-node
# --netns cluster exchanges verified data (experiments/faults/gm-mpi-soak) while
# gm-inject, on a third interface on the same bridge (its own namespace),
# fires volleys of random and malformed gamma frames at both nodes (bad
# lengths, versions, types, checksums, keys, forged ports, out-of-window
# sequence numbers with the job's own key, random bytes), aimed at the job's
# live ports, which root learns from the port reservations (live_ports in
# cluster-lib.sh).
# The job runs until the test tells it to stop, after the last volley, so
# every volley meets it whatever the machine's speed. The job must verify,
# and FI_GAMMA_STATS must show the bad frames counted on both nodes with no
# peer failed.
. "$(dirname "$0")/cluster-lib.sh" hs
INJECT=$BUILT/tools/gm-inject SOAK=$BUILT/../experiments/faults/gm-mpi-soak
[ -x "$INJECT" ] || fail "$INJECT not built (make check builds it)"
[ -x "$SOAK" ] || fail "$SOAK not built (make check builds it)"
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v unshare >/dev/null || skip "unshare not installed"
. "$top/tools/gamma-env.sh"
FI_GAMMA_IFACE= timeout 30 fi_info -p gamma >/dev/null 2>&1 ||
	skip "provider gamma not loadable (fi_info -p gamma)"

up "$NAME" --nodes 2 --netns
n0=gc-$NAME-n0 n1=gc-$NAME-n1
hostile_station hi

macs=$(node_mac "$n0"),$(node_mac "$n1")

mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
ready=$WORK/ready stop=$WORK/stop
FI_GAMMA_STATS=1 timeout -k 10 300 "${MPI_CMD[@]}" -np 2 \
	"${MPI_BTL_GAMMA[@]}" --mca btl_gamma_if_include "$n0,$n1" \
	--mca btl_base_verbose 10 \
	-x FI_GAMMA_STATS \
	"$SOAK" "$ready" "$stop" >"$WORK/job.out" 2>&1 &
job=$!
BGPIDS="$BGPIDS $job"
# The job's first round verified on both ranks: its ports are open on both nodes.
wait_for -t 120 $job test -e "$ready" ||
	fail "the job verified no first round: $WAIT_ERROR: $(tail -30 "$WORK/job.out")"
p0=$(live_ports "$n0" | paste -sd,) p1=$(live_ports "$n1" | paste -sd,)
[ -n "$p0" ] && [ -n "$p1" ] || fail "no live gamma ports on $n0 ('$p0') or $n1 ('$p1')"
key=$(grep -o 'job key 0x[0-9a-f]*' "$WORK/job.out" | head -1 | awk '{print $3}')
args=(-i "$hif" -m "$macs" -p "$p0,$p1" -r 4000 -t 1)
[ -n "$key" ] && args+=(-k "$key")

# Each volley must have gone out and met the job alive on the same ports.
volleys=3
for v in $(seq $volleys); do
	ip netns exec "$hns" timeout 60 "$INJECT" "${args[@]}" >"$WORK/inject.out" 2>&1 ||
		fail "gm-inject failed: $(tail -3 "$WORK/inject.out")"
	grep -q '^gm-inject: sent [1-9][0-9]* frames' "$WORK/inject.out" ||
		fail "volley $v: gm-inject sent nothing: $(cat "$WORK/inject.out")"
	cat "$WORK/inject.out"
	kill -0 $job 2>/dev/null || fail "the job ended during volley $v: $(tail -30 "$WORK/job.out")"
	[ "$(live_ports "$n0" | paste -sd,)" = "$p0" ] && [ "$(live_ports "$n1" | paste -sd,)" = "$p1" ] ||
		fail "volley $v: the job's ports changed (were $p0 and $p1)"
done
touch "$stop"
wait $job
rc=$?
BGPIDS=
out=$(cat "$WORK/job.out")
[ $rc -eq 0 ] || fail "the MPI job failed under hostile frames (rc $rc): $(tail -30 <<<"$out")"
grep -q '^gm-mpi-soak: ok: ' <<<"$out" || fail "the job did not verify its data: $(tail -30 <<<"$out")"
# Counters of a stats line: "... bad csum A hdr B port C key D version E; ...
# peers failed F; bad mac G; ... restarts H ...".  The job has a secret, so
# frames with its key id but no valid MAC count as bad mac (bad csum without).
for n in "$n0" "$n1"; do
	line=$(grep "^gamma stats $n:" <<<"$out") || fail "no FI_GAMMA_STATS line for $n: $out"
	echo "$line"
	read -r csum hdr key ver failed mac restarts < <(sed -E 's/.*bad csum ([0-9]+) hdr ([0-9]+) port [0-9]+ key ([0-9]+) version ([0-9]+);.*peers failed ([0-9]+);.*bad mac ([0-9]+);.*restarts ([0-9]+).*/\1 \2 \3 \4 \5 \6 \7/' <<<"$line")
	[ "${mac:-0}" -gt 0 ] && [ "${key:-0}" -gt 0 ] && [ "${ver:-0}" -gt 0 ] ||
		fail "$n: hostile frames not counted (bad mac '$mac' key '$key' version '$ver')"
	[ "$failed" = 0 ] || fail "$n: hostile frames failed a real peer ($failed)"
	[ "$restarts" = 0 ] || fail "$n: hostile frames restarted a real peer ($restarts)"
done
ok "$(grep -o 'gm-mpi-soak: ok: .*' <<<"$out" | cut -d' ' -f3-) over gamma, through $volleys one-second volleys at live ports $p0 and $p1; bad frames counted on both nodes"
