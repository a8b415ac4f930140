#!/bin/bash
# Issue #16: an MPI job over one multi-rail btl gamma module per node
# (btl_gamma_if_include n0+n0b: the provider's rails), a verified ring of
# eager and rendezvous messages (mpi/until-stop), and rail 0's gamma
# frames cut at node 1's switch port in the middle of it: the job goes on
# verifying rounds, ends cleanly, no peer fails, and FI_GAMMA_STATS shows
# the failover.
. "$(dirname "$0")/cluster-lib.sh" mf
command -v mpirun >/dev/null || skip "mpirun not installed"
mpicc=${MPICC:-mpicc.openmpi}
command -v "$mpicc" >/dev/null || mpicc=mpicc
command -v "$mpicc" >/dev/null || skip "mpicc not installed"
. "$top/tools/gamma-env.sh"
"$mpicc" -O2 -o "$WORK/until-stop" "$top/mpi/until-stop.c" || fail "cannot build until-stop"

up "$NAME" --nodes 2 --netns --rails 2
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
n=gc-$NAME-n
ready=$WORK/ready stop=$WORK/stop
FI_GAMMA_STATS=1 FI_LOG_LEVEL=warn FI_LOG_PROV=gamma timeout -k 10 300 "${MPI_CMD[@]}" -np 2 \
	"${MPI_BTL_GAMMA[@]}" --mca btl_gamma_if_include "${n}0+${n}0b,${n}1+${n}1b" \
	-x FI_GAMMA_STATS -x FI_LOG_LEVEL -x FI_LOG_PROV \
	"$WORK/until-stop" "$ready" "$stop" >"$WORK/job.out" 2>&1 &
job=$!
BGPIDS="$BGPIDS $job"
# rounds_past N: wait until the job has verified more than N rounds.
rounds_past()
{
	for _ in $(seq 1200); do
		[ -e "$ready" ] && [ "$(cat "$ready")" -gt "$1" ] && return 0
		kill -0 $job 2>/dev/null || fail "the job ended: $(tail -30 "$WORK/job.out")"
		sleep 0.1
	done
	fail "the job verified no more than $1 rounds in 120 s: $(tail -30 "$WORK/job.out")"
}
rounds_past 0
r0=$(cat "$ready")
# Cut gamma frames both ways at node 1's rail 0 port (a bpf action returning
# 2, TC_ACT_SHOT, for the EtherType): mpirun's own TCP runs on rail 0's subnet
# and must pass, or MPI_Finalize never completes.
port=gc-$NAME-p1
tc qdisc add dev "$port" clsact &&
	tc filter add dev "$port" ingress protocol 0x88b5 prio 1 bpf da bytecode "1,6 0 0 2" &&
	tc filter add dev "$port" egress protocol 0x88b5 prio 1 bpf da bytecode "1,6 0 0 2" ||
	fail "cannot cut gamma frames on $port"
rounds_past $((r0 + 128))
r1=$(cat "$ready")
touch "$stop"
wait $job
rc=$?
BGPIDS=
out=$(cat "$WORK/job.out")
[ $rc -eq 0 ] || fail "the job failed with rail 0 cut (rc $rc): $(tail -30 <<<"$out")"
grep -q 'until-stop: [0-9]* rounds verified on 2 ranks' <<<"$out" ||
	fail "the job did not verify: $(tail -30 <<<"$out")"
grep -E "^gamma msg stats ${n}[01]\+${n}[01]b .*rail failovers [1-9]" <<<"$out" >/dev/null ||
	fail "no failover counted: $(grep '^gamma msg stats' <<<"$out")"
grep '^gamma stats ' <<<"$out" | grep -v 'peers failed 0;' && fail "a peer failed although rail 1 worked"
ok "rail 0 cut at round $r0: the job verified on past round $r1 over rail 1; $(grep -o 'rail failovers [0-9]*' <<<"$out" | paste -sd,)"
