# Shared by the virtual-cluster tests (sourced, not run): paths, skip rules,
# a unique cluster name, and removal of that cluster on any exit.  Clusters
# and the mpirun recipe come from tools/lib/mpi.sh, as for the experiments.
#   . "$(dirname "$0")/cluster-lib.sh" PREFIX
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
GC=$top/tools/gamma-cluster
RSH=$top/tools/gamma-rsh
# shellcheck source=../../tools/lib/mpi.sh
. "$top/tools/lib/mpi.sh"
# shellcheck source=wait-lib.sh
. "$top/tests/integration/wait-lib.sh"
# Check programs are built in the tests build directory (automake runs tests there).
BUILT=${GM_TESTS_BUILDDIR:-$(pwd)}
# The MPI programs are built in the build tree's mpi/ (make check builds them).
MPI_PROGS=${GM_MPI_BUILDDIR:-$BUILT/../mpi}
RAWFRAME=$BUILT/tools/gm-rawframe

fail()
{
	echo "FAIL: $*"
	exit 1
}
ok() { echo "ok: $*"; }
skip()
{
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (creates bridges, veths and namespaces)"
for _t in ip tc; do command -v $_t >/dev/null || skip "'$_t' not installed (iproute2)"; done

# Short and unique: interface names derived from it must fit in 15 chars.
NAME=${1}$(($$ % 100000))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gc-$NAME.XXXXXX")
# Background jobs go first, while the cluster still stands: mpirun stops
# its daemons over the cluster's links, and a daemon whose links went first
# stays behind for good.  (A job is "timeout -k 10 ... mpirun": it is gone
# 10 s after the signal at the latest.)
bg_gone()
{
	local p
	for p in $BGPIDS; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
cleanup()
{
	if [ -n "${BGPIDS:-}" ]; then
		kill $BGPIDS 2>/dev/null
		wait_for -t 20 '' bg_gone
	fi
	cluster_down_all
	[ -n "${hns:-}" ] && ip netns del "$hns" 2>/dev/null
	[ -n "${hbr:-}" ] && ip link del "$hbr" 2>/dev/null
	rm -rf "$WORK"
}
BGPIDS=
hns= hbr=
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# up NAME ARGS...: bring a cluster up, remember to remove it, and wait
# until its links carry frames.
up()
{
	CLUSTER_LOG=$WORK/up.out
	cluster_up "$@" || fail "$CLUSTER_ERROR"
}

# Everything of cluster $1 that the system shows: links, namespaces, state.
residue()
{
	{
		ip -br link | awk '{print $1}' | grep -F -- "gc-$1-"
		ip netns list | grep -F -- "gc-$1-"
		ls -d "/run/gamma-cluster/$1" 2>/dev/null
	} | sort
}

# Start a receiver in the background (args: a command that runs gm-rawframe
# recv -w), wait until it is listening; its output goes to $WORK/recv.out.
start_recv()
{
	: >"$WORK/recv.out"
	"$@" >"$WORK/recv.out" 2>&1 &
	RECV_PID=$!
	BGPIDS="$BGPIDS $RECV_PID"
	wait_for $RECV_PID grep -q 'gm-rawframe: ready' "$WORK/recv.out" ||
		fail "receiver not ready: $WAIT_ERROR: $(cat "$WORK/recv.out")"
}

# The sender is done: tell the receiver (its TIMEOUT_MS runs from now on,
# see gm-rawframe -w), wait for it; print its result line. Call it from the
# shell that started the receiver, not from a $(...) subshell.
wait_recv()
{
	kill -TERM $RECV_PID 2>/dev/null
	wait $RECV_PID
	grep 'gm-rawframe: received' "$WORK/recv.out" || fail "receiver printed no result: $(cat "$WORK/recv.out")"
}

# Packets sent by htb class $2 on device $1 (optionally in namespace $3).
class_pkts()
{
	local -a tcx=(tc)
	[ -n "${3:-}" ] && tcx=(ip netns exec "$3" tc)
	"${tcx[@]}" -s class show dev "$1" | awk -v c="$2" '
		$1 == "class" { cur = $3 }
		$1 == "Sent" && cur == c { print $4; found = 1 }
		END { if (!found) print "none" }'
}

# veth_ns A B: a namespace NS=gc-$NAME of its own holding the veth pair A-B,
# both up; removed on exit.
veth_ns()
{
	NS=gc-$NAME
	ip netns add "$NS" || fail "ip netns add $NS"
	trap 'ip netns del "$NS" 2>/dev/null; cleanup' EXIT
	ip -n "$NS" link add "$1" type veth peer name "$2" && ip -n "$NS" link set "$1" up &&
		ip -n "$NS" link set "$2" up || fail "veth pair $1-$2 in $NS"
}

# hostile_station PREFIX: a station of no job on cluster $NAME's bridge, for
# tests that attack a job: veth $hif in namespace $hns (both removed on exit).
hostile_station()
{
	hns=$1-$NAME hif=$1${NAME}a hbr=$1${NAME}b
	ip netns add "$hns" || fail "netns add $hns"
	ip link add "$hbr" type veth peer name "$hif" netns "$hns" || fail "veth $hbr"
	ip link set "$hbr" master "gc-$NAME-br" up || fail "attach $hbr to the bridge"
	ip -n "$hns" link set "$hif" up || fail "$hif up"
}

# node_mac NODE: the MAC of a --netns node's interface.
node_mac() { ip -n "$1" -br link show dev "$1" | awk '{print $3}'; }

# live_ports NODE: the gamma ports open on a --netns node, one a line, sorted.
# Root's port reservations are files /run/gamma/NETNS-ETHERTYPE-IFINDEX-PORT
# that only root can read (provider/gm_portres.c; NETNS: the inode of the
# node's network namespace).
live_ports()
{
	ls /run/gamma 2>/dev/null | awk -F- -v ns="$(stat -Lc %i "/run/netns/$1")" '$1 == ns {print $4}' |
		sort -un
}

# cut_gamma PORT...: drop gamma frames (EtherType 0x88B5) both ways at these
# bridge ports of the cluster, all in one tc run; everything else passes
# (mpirun's own TCP).  The filter is a one-instruction classic bpf program
# returning 2 (TC_ACT_SHOT); it goes with the port at cluster down.
cut_gamma()
{
	local p
	for p in "$@"; do
		echo "qdisc add dev $p clsact"
		echo "filter add dev $p ingress protocol 0x88b5 prio 1 bpf da bytecode \"1,6 0 0 2\""
		echo "filter add dev $p egress protocol 0x88b5 prio 1 bpf da bytecode \"1,6 0 0 2\""
	done | tc -batch - || fail "cannot cut gamma frames at $*"
}

# mpi_build NAME: mpi/NAME.c built into $WORK/NAME with the MPI compiler
# configure found ($MPICC), else mpicc.openmpi or mpicc; skip without one.
mpi_build()
{
	local cc=${MPICC:-mpicc.openmpi}
	command -v "$cc" >/dev/null || cc=mpicc
	command -v "$cc" >/dev/null || skip "mpicc not installed"
	"$cc" -O2 -o "$WORK/$1" "$top/mpi/$1.c" || fail "cannot build $1"
}

# until_stop ARGS...: a job that passes verified messages around a ring
# until told to stop (mpi/until-stop, built by mpi_build until-stop), in the
# background: "${MPI_CMD[@]}" ARGS... until-stop; its output in $WORK/job.out,
# mpirun's pid in JOB.  rounds_past N returns once it has verified more than
# N rounds (rank 0 writes the count into $READY after round 1, then every 64);
# touch "$STOP" ends it.
until_stop()
{
	READY=$WORK/ready STOP=$WORK/stop
	rm -f "$READY" "$STOP" # an earlier job's
	timeout -k 10 300 "${MPI_CMD[@]}" "$@" "$WORK/until-stop" "$READY" "$STOP" >"$WORK/job.out" 2>&1 &
	JOB=$!
	BGPIDS="$BGPIDS $JOB"
}
rounds_done() { [ -e "$READY" ] && [ "$(cat "$READY")" -gt "$1" ]; }
rounds_past()
{
	wait_for -t 120 "$JOB" rounds_done "$1" ||
		fail "the job verified no more than $1 rounds: $WAIT_ERROR: $(tail -30 "$WORK/job.out")"
}

# stop_verified WHEN: stop the until_stop job and wait for it; fail (saying
# WHEN) unless mpirun exited 0 and rank 0 printed its verdict.  The job's
# output is in $out after.
stop_verified()
{
	local rc
	touch "$STOP"
	wait "$JOB"
	rc=$?
	BGPIDS=
	out=$(cat "$WORK/job.out")
	[ $rc -eq 0 ] || fail "the job failed $1 (rc $rc): $(tail -30 <<<"$out")"
	grep -q 'until-stop: [0-9]* rounds verified on [0-9]* ranks' <<<"$out" ||
		fail "the job did not verify $1: $(tail -30 <<<"$out")"
}

# rails_ring [OOB_RAIL]: issue #16's MPI set-up: a 2-node --netns cluster
# with 2 rails, MPI_CMD for it with mpirun's own TCP on rail OOB_RAIL's
# subnet (default 0), and until_stop started over one multi-rail btl gamma
# module per node (btl_gamma_if_include n0+n0b,n1+n1b) with FI_GAMMA_STATS
# and gamma's warnings; returns once it has verified a round.  Node
# interfaces are ${n}0, ${n}0b (node 0's rail 1), ...  Provider variables
# for the ranks: put them in the environment and name them in RING_X
# (-x FI_GAMMA_...).  ring_job starts another such job on the cluster.
rails_ring()
{
	local hf subs
	command -v mpirun >/dev/null || skip "mpirun not installed"
	mpi_build until-stop
	. "$top/tools/gamma-env.sh"
	up "$NAME" --nodes 2 --netns --rails 2
	hf=$("$GC" hostfile "$NAME") && subs=$("$GC" subnets "$NAME") ||
		fail "no hostfile or subnets for $NAME"
	IFS=, read -ra subs <<<"$subs"
	mpi_ompi "$hf" "$RSH" "${subs[${1:-0}]}"
	n=gc-$NAME-n
	ring_job
}
ring_job()
{
	FI_GAMMA_STATS=1 FI_LOG_LEVEL=warn FI_LOG_PROV=gamma until_stop -np 2 \
		"${MPI_BTL_GAMMA[@]}" --mca btl_gamma_if_include "${n}0+${n}0b,${n}1+${n}1b" \
		-x FI_GAMMA_STATS -x FI_LOG_LEVEL -x FI_LOG_PROV ${RING_X:-}
	rounds_past 0
}
