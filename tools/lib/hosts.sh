# tools/lib/hosts.sh: the hosts of a job and the launcher that reaches them,
# shared by npb-runs/run, experiments/perf/gamma-bench, experiments/dq/gamma-streams and
# experiments/faults/gamma-faults (sourced by bash).  Real machines and the virtual
# cluster go through the same code: a hosts file, an rsh-style command, and
# the checks below; gamma-cluster is one way of producing such a file.
#
# Hosts file: the format of mpirun's hostfile, one host per line, optional
# `slots=N` and `iface=IF` (the Ethernet interface gamma and the TCP
# baselines use there; default: the --iface given), `#` comments.
#
#   hosts_load FILE IFACE RSH     read FILE; RSH is the agent (default ssh)
#   hosts_probe DIR               check every host up front; DIR/hosts.txt
#   hosts_write DIR SLOTS         hostfiles for Open MPI and MPICH in DIR
#   hosts_ompi [NP]               array HOSTS_CMD: mpirun and its launch options
#   hosts_mpich NP                array HOSTS_CMD: mpiexec.hydra and its options
#   hosts_run I CMD...            run CMD on host I (its interface in the env)
#   hosts_from_cluster NAME DIR   the hosts of a gamma-cluster --netns cluster
#
# Errors: the functions set HOSTS_ERROR (one line per failing host) and
# return 1; the caller says it and stops.  Nothing here creates, configures
# or shapes anything on a host.

# shellcheck shell=bash
HOSTS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HOSTS_NAME=() HOSTS_SLOTS=() HOSTS_IFACE=() HOSTS_ADDR=() HOSTS_MTU=() HOSTS_CORES=()
HOSTS_RSH=ssh HOSTS_SUBNETS='' HOSTS_LOCAL_ADDR='' HOSTS_ERROR='' HOSTS_DIR=''

# hosts_load FILE IFACE RSH
hosts_load()
{
	local file=$1 iface=$2 line name w slots ifc n=0
	HOSTS_NAME=() HOSTS_SLOTS=() HOSTS_IFACE=() HOSTS_ERROR=''
	HOSTS_RSH=${3:-ssh}
	[ -f "$file" ] && [ -r "$file" ] || { HOSTS_ERROR="hosts file $file: no such readable file"; return 1; }
	read -r -a w <<<"$HOSTS_RSH"
	command -v "${w[0]}" >/dev/null || { HOSTS_ERROR="--rsh '$HOSTS_RSH': ${w[0]} not found"; return 1; }
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		line=${line%%#*}
		read -r -a w <<<"$line"
		[ ${#w[@]} -gt 0 ] || continue
		name=${w[0]} slots='' ifc=$iface
		[[ $name =~ ^[A-Za-z0-9_][A-Za-z0-9_.:@-]*$ ]] ||
			{ HOSTS_ERROR="$file:$n: '$name' is not a host name"; return 1; }
		for w in "${w[@]:1}"; do
			case $w in
			slots=* | max_slots=*) slots=${w#*=} ;;
			iface=*) ifc=${w#iface=} ;;
			*) HOSTS_ERROR="$file:$n: unknown word '$w' (host [slots=N] [iface=IF])"; return 1 ;;
			esac
		done
		[ -z "$slots" ] || [[ $slots =~ ^[1-9][0-9]{0,3}$ ]] ||
			{ HOSTS_ERROR="$file:$n: slots needs a whole number from 1 to 9999, not '$slots'"; return 1; }
		[ -n "$ifc" ] || { HOSTS_ERROR="$file:$n: no interface for $name (give --iface or iface=IF)"; return 1; }
		[[ $ifc =~ ^[A-Za-z0-9_.:@-]{1,15}$ ]] ||
			{ HOSTS_ERROR="$file:$n: '$ifc' is not an interface name"; return 1; }
		[[ " ${HOSTS_NAME[*]} " != *" $name "* ]] || { HOSTS_ERROR="$file:$n: host $name listed twice"; return 1; }
		HOSTS_NAME+=("$name") HOSTS_SLOTS+=("$slots") HOSTS_IFACE+=("$ifc")
	done <"$file"
	[ ${#HOSTS_NAME[@]} -gt 0 ] || { HOSTS_ERROR="hosts file $file names no host"; return 1; }
}

# ip2int A.B.C.D
ip2int()
{
	local IFS=. a b c d
	read -r a b c d <<<"$1"
	echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

# net_of A.B.C.D/N: the network A'.B'.C'.D'/N of the address.
net_of()
{
	local ip=${1%/*} len=${1#*/} v m
	v=$(ip2int "$ip")
	m=$(((0xffffffff << (32 - len)) & 0xffffffff))
	v=$((v & m))
	echo "$((v >> 24 & 255)).$((v >> 16 & 255)).$((v >> 8 & 255)).$((v & 255))/$len"
}

# hosts_probe DIR [LOGDIR]: runs tools/lib/hosts-probe on every host through the
# agent, with the job's environment (FI_PROVIDER_PATH): the plugins load,
# the interface is up with an IPv4 address, raw sockets are possible; all
# interfaces have one MTU; this machine has an address on their network (the
# launchers call back to it).  Writes DIR/hosts.txt (and each host's answer
# to LOGDIR, default DIR), sets HOSTS_ADDR,
# HOSTS_MTU, HOSTS_CORES, HOSTS_SUBNETS (comma list) and HOSTS_LOCAL_ADDR.
hosts_probe()
{
	local dir=$1 logs=${2:-$1} i h out rc k v mtu0='' errs='' sub subs=' ' a
	local -A p
	HOSTS_ADDR=() HOSTS_MTU=() HOSTS_CORES=()
	printf '%-16s %-12s %6s %10s %-8s %-18s %-12s %s\n' host iface mtu speed cores address raw-sockets kernel \
		>"$dir/hosts.txt"
	for i in "${!HOSTS_NAME[@]}"; do
		h=${HOSTS_NAME[$i]}
		out=$(timeout 60 bash -c 'read -r -a a <<<"$1"; shift; "${a[@]}" "$@"' agent "$HOSTS_RSH" "$h" \
			sh -s -- "${HOSTS_IFACE[$i]}" "$(printf %q "${FI_PROVIDER_PATH:-}")" \
			"$(printf %q "${FI_GAMMA_RAWD:-}")" "$(printf %q "${OMPI_MCA_mca_base_component_path:-}")" \
			<"$HOSTS_LIB/hosts-probe" 2>"$logs/probe.$h.err")
		rc=$?
		printf '%s\n' "$out" >"$logs/probe.$h.out"
		p=()
		while IFS='=' read -r k v; do [ -n "$k" ] && p[$k]=$v; done <<<"$out"
		if [ -z "${p[kernel]:-}" ]; then
			errs+="host $h: cannot run a command there through '$HOSTS_RSH' (exit $rc: $(head -c 200 \
				"$logs/probe.$h.err" | tr '\n' ' '))"$'\n'
			continue
		fi
		if [ -n "${p[error]:-}" ]; then
			errs+="host $h: ${p[error]}"$'\n'
			continue
		fi
		HOSTS_ADDR[$i]=${p[addr]} HOSTS_MTU[$i]=${p[mtu]} HOSTS_CORES[$i]=${p[cores]}
		printf '%-16s %-12s %6s %10s %-8s %-18s %-12s %s\n' "$h" "${HOSTS_IFACE[$i]}" "${p[mtu]}" \
			"${p[speed]}" "${p[cores]}" "${p[addr]}" "${p[raw]}" "${p[kernel]}" >>"$dir/hosts.txt"
		[ -n "$mtu0" ] || mtu0="${p[mtu]} (host ${HOSTS_NAME[0]}, ${HOSTS_IFACE[0]})"
		[ "${p[mtu]}" = "${mtu0%% *}" ] ||
			errs+="host $h: ${HOSTS_IFACE[$i]} has MTU ${p[mtu]}, but $mtu0: one MTU on every host"$'\n'
		sub=$(net_of "${p[addr]}")
		[[ $subs == *" $sub "* ]] || subs+="$sub "
	done
	HOSTS_ERROR=${errs%$'\n'}
	[ -z "$HOSTS_ERROR" ] || return 1
	subs=${subs# }
	subs=${subs% }
	HOSTS_SUBNETS=${subs// /,}
	# mpirun's out-of-band channel and hydra call back to this machine.
	HOSTS_LOCAL_ADDR=''
	while read -r a; do
		[[ " $subs " == *" $(net_of "$a") "* ]] && { HOSTS_LOCAL_ADDR=${a%/*}; break; }
	done < <(ip -4 -o addr show 2>/dev/null | awk '{print $4}')
	[ -n "$HOSTS_LOCAL_ADDR" ] || {
		HOSTS_ERROR="this machine (where mpirun runs) has no address on $HOSTS_SUBNETS; run from a host on that network"
		return 1
	}
}

# hosts_write DIR SLOTS: DIR/hostfile (Open MPI) and DIR/hostfile.mpich; a
# host without slots= gets SLOTS.  Also DIR/agent.map for hosts-rsh-env.
hosts_write()
{
	local dir=$1 slots=$2 i s
	HOSTS_DIR=$dir
	: >"$dir/hostfile" && : >"$dir/hostfile.mpich" && : >"$dir/agent.map" || return 1
	for i in "${!HOSTS_NAME[@]}"; do
		s=${HOSTS_SLOTS[$i]:-$slots}
		echo "${HOSTS_NAME[$i]} slots=$s" >>"$dir/hostfile"
		echo "${HOSTS_NAME[$i]}:$s" >>"$dir/hostfile.mpich"
		echo "${HOSTS_NAME[$i]} ${HOSTS_IFACE[$i]}" >>"$dir/agent.map"
	done
}

# hosts_slots SLOTS: the slots of every host together.
hosts_slots()
{
	local i t=0
	for i in "${!HOSTS_NAME[@]}"; do t=$((t + ${HOSTS_SLOTS[$i]:-$1})); done
	echo $t
}

# The agent both launchers use: the user's RSH, with the host's interface
# put into the remote command's environment (hosts-rsh-env).
export_agent()
{
	export GAMMA_HOSTS_RSH=$HOSTS_RSH GAMMA_HOSTS_MAP=$HOSTS_DIR/agent.map
}

# hosts_ompi [NP]: HOSTS_CMD=(mpirun --hostfile F ...) with the launch options: no
# binding (every orted would bind its rank to core 0), one agent call per
# host from here (no tree spawn: the agent lives on this machine), the
# out-of-band channel on the hosts' network, the plugin paths passed on.
hosts_ompi()
{
	export_agent
	HOSTS_CMD=(mpirun --hostfile "$HOSTS_DIR/hostfile" ${1:+-np "$1"} --bind-to none
		--mca plm_rsh_agent "$HOSTS_LIB/hosts-rsh-env" --mca plm_rsh_no_tree_spawn 1
		--mca oob_tcp_if_include "$HOSTS_SUBNETS")
	[ -n "${FI_PROVIDER_PATH:-}" ] && HOSTS_CMD+=(-x FI_PROVIDER_PATH)
	[ -n "${OMPI_MCA_mca_base_component_path:-}" ] && HOSTS_CMD+=(-x OMPI_MCA_mca_base_component_path)
	[ -n "${FI_GAMMA_RAWD:-}" ] && HOSTS_CMD+=(-x FI_GAMMA_RAWD)
	return 0
}

# hosts_mpich NP: HOSTS_CMD=(mpiexec.hydra ... -n NP).
hosts_mpich()
{
	export_agent
	HOSTS_CMD=(mpiexec.hydra -launcher rsh -launcher-exec "$HOSTS_LIB/hosts-rsh-env"
		-f "$HOSTS_DIR/hostfile.mpich" -localhost "$HOSTS_LOCAL_ADDR" -n "$1")
}

# hosts_run I CMD...: runs the command CMD (quoted for the remote shell) on
# host I with its interface and the plugin paths in the environment.
hosts_run()
{
	local i=$1 env=''
	shift
	export_agent
	[ -n "${FI_PROVIDER_PATH:-}" ] && env+="FI_PROVIDER_PATH=$(printf %q "$FI_PROVIDER_PATH") "
	[ -n "${FI_GAMMA_RAWD:-}" ] && env+="FI_GAMMA_RAWD=$(printf %q "$FI_GAMMA_RAWD") "
	"$HOSTS_LIB/hosts-rsh-env" "${HOSTS_NAME[$i]}" "${env:+export $env;}" "$(printf '%q ' "$@")"
}

# hosts_from_cluster NAME DIR: loads the nodes of gamma-cluster NAME (made
# with --netns) as hosts, reached through gamma-rsh; DIR/hosts is the file.
hosts_from_cluster()
{
	local gc=$HOSTS_LIB/../gamma-cluster hf ifs
	hf=$("$gc" hostfile "$1") && ifs=$("$gc" ifaces "$1") &&
		paste -d' ' <(awk '{print $1}' "$hf") <(tr , '\n' <<<"$ifs") | awk '{print $1, "iface=" $2}' \
			>"$2/hosts" || { HOSTS_ERROR="cannot list the hosts of cluster $1"; return 1; }
	hosts_load "$2/hosts" '' "$HOSTS_LIB/../gamma-rsh"
}
