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
cleanup()
{
	cluster_down_all
	[ -n "${BGPIDS:-}" ] && kill $BGPIDS 2>/dev/null
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
