# tools/lib/mpi.sh: a virtual cluster brought up and down, and the mpirun
# recipe that reaches its nodes or real hosts (sourced by bash).  Shared by
# the experiments' drivers, tools/lib/hosts.sh and the tests, so that the
# launch options learnt the hard way (DESIGN.md) are written once.
#
#   cluster_up NAME ARGS...   gamma-cluster up NAME ARGS..., remembered for
#                             cluster_down_all, then waits until its links
#                             carry frames; output in $CLUSTER_LOG
#   cluster_down_all          removes every cluster cluster_up made (EXIT traps)
#   links_ready NAME          waits (up to 30 s) until cluster NAME's links forward
#   mpi_root_env              lets mpirun run as root (it refuses by default)
#   mpi_ompi [HOSTFILE AGENT SUBNETS]
#                             array MPI_CMD: mpirun with the launch options, on
#                             this machine, or on HOSTFILE's hosts through the
#                             rsh AGENT with the out-of-band channel on SUBNETS
#   mpi_cluster NAME [ARGS]   MPI_CMD for the nodes of --netns cluster NAME
#                             (ARGS: of gamma-cluster hostfile, e.g. --slots 2)
#   MPI_BTL_GAMMA             the options that put a job on btl gamma
#
# Errors: the functions set CLUSTER_ERROR and return 1; the caller says it
# and stops.

# shellcheck shell=bash
MPI_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MPI_GC=$MPI_LIB/../gamma-cluster
MPI_CMD=() CLUSTER_ERROR='' CLUSTER_LOG=/dev/null CLUSTERS_UP=''
MPI_BTL_GAMMA=(--mca pml ob1 --mca btl self,vader,gamma)

cluster_up()
{
	CLUSTERS_UP="$CLUSTERS_UP $1"
	timeout 120 "$MPI_GC" up "$@" >"$CLUSTER_LOG" 2>&1 ||
		{ CLUSTER_ERROR="gamma-cluster up $*: $(cat "$CLUSTER_LOG" 2>/dev/null)"; return 1; }
	links_ready "$1"
}

cluster_down_all()
{
	local n
	for n in $CLUSTERS_UP; do "$MPI_GC" down "$n" >/dev/null 2>&1; done
	CLUSTERS_UP=''
}

# Until every link of the cluster is up with its carrier and every bridge
# port forwards, the kernel drops what is sent.
links_ready()
{
	local i f ns notready
	for i in $(seq 300); do
		notready=$({
			ip -br link
			for ns in $(ip netns list | awk -v p="gc-$1-" 'index($1, p) == 1 {print $1}'); do
				ip -n "$ns" -br link
			done
		} | awk -v p="gc-$1-" 'index($1, p) == 1 && $2 != "UP" {print $1}'
			for f in /sys/class/net/gc-"$1"-*/brport/state; do
				[ -e "$f" ] && [ "$(cat "$f")" != 3 ] && echo "${f#/sys/class/net/} not forwarding"
			done)
		[ -z "$notready" ] && return 0
		sleep 0.1
	done
	CLUSTER_ERROR="cluster $1: links not ready after 30 s: $notready"
	return 1
}

mpi_root_env()
{
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# No binding: every orted would bind its rank to core 0, and two busy-polling
# ranks on one core turn microseconds into milliseconds.  The plugin paths
# go to every rank (tools/gamma-env.sh).
mpi_ompi()
{
	mpi_root_env
	MPI_CMD=(mpirun)
	[ $# -eq 0 ] ||
		MPI_CMD+=(--hostfile "$1" --mca plm_rsh_agent "$2" --mca oob_tcp_if_include "$3")
	MPI_CMD+=(--bind-to none)
	[ -z "${FI_PROVIDER_PATH:-}" ] || MPI_CMD+=(-x FI_PROVIDER_PATH)
	[ -z "${OMPI_MCA_mca_base_component_path:-}" ] || MPI_CMD+=(-x OMPI_MCA_mca_base_component_path)
	return 0
}

# Each node has its own hostname and namespace, reached through gamma-rsh.
mpi_cluster()
{
	local hf sub
	hf=$("$MPI_GC" hostfile "$@") && sub=$("$MPI_GC" subnet "$1") ||
		{ CLUSTER_ERROR="cannot get the hostfile and subnet of cluster $1"; return 1; }
	mpi_ompi "$hf" "$MPI_LIB/../gamma-rsh" "$sub"
}
