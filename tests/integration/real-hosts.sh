#!/bin/bash
# The real-cluster path (--hosts/--iface/--rsh) of npb-runs/run and
# experiments/perf/gamma-bench, on two "hosts" this test makes itself, not with
# gamma-cluster: two network namespaces, each with one veth link (named
# differently on each host) to a bridge, reached only through a plain
# ssh-compatible agent script.  Checks: the up-front host checks refuse a
# missing interface, an MTU mismatch and an unreachable host with one line
# naming the host, before running anything; each launched process gets its
# own host's interface; npb-runs/run --quick gives a table of verified rows
# and records every host; gamma-faults runs on clean links (and refuses
# shaping); gamma-bench --quick verifies every stack and the floor.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GAMMA_BUILD_DIR:-$(cd .. && pwd)}
[ -x "$build/npb-runs/bin/is" ] || build=$top
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
[ "$(id -u)" -eq 0 ] || skip "needs root (creates namespaces, veths and a bridge)"
for t in ip unshare mpirun gnuplot; do command -v $t >/dev/null || skip "$t not installed"; done
[ -x "$build/npb-runs/bin/is" ] || fail "kernels not built (make in npb-runs)"
export GAMMA_BUILD_DIR=$build

id=rh$(($$ % 100000))
A=$id-a B=$id-b BR=$id-br
WORK=$(mktemp -d "${TMPDIR:-/tmp}/realhosts.XXXXXX")
cleanup()
{
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	ip link del "$BR" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# A free 10.87.X.0/24.
net=
for x in $(seq 1 250); do
	ip -4 -o addr | grep -q " 10\.87\.$x\." || { net=10.87.$x; break; }
done
[ -n "$net" ] || skip "no free 10.87.X.0/24"

ip link add "$BR" type bridge || fail "cannot create bridge $BR"
ip addr add "$net.254/24" dev "$BR" && ip link set "$BR" up || fail "bridge address"
n=1
for h in "$A" "$B"; do
	ip netns add "$h" || fail "netns $h"
	ifc=lan$n # each host names its interface differently
	ip link add "$h-p" type veth peer name "$ifc" netns "$h" || fail "veth for $h"
	ip link set "$h-p" master "$BR" up &&
		ip -n "$h" link set lo up && ip -n "$h" link set "$ifc" up &&
		ip -n "$h" addr add "$net.$n/24" dev "$ifc" || fail "set-up of $h"
	n=$((n + 1))
done

# The agent: what ssh does, for a namespace: AGENT HOST COMMAND... joins the
# command words and runs them in a shell on HOST, under HOST's own host name.
AGENT=$WORK/agent
cat >"$AGENT" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
h=$1
shift
exec ip netns exec "$h" unshare --uts sh -c 'hostname "$1" && shift && eval "$*"' agent "$h" "$@"
EOF
chmod +x "$AGENT"
[ "$("$AGENT" "$B" echo '$(hostname)' '$((6 * 7))')" = "$B 42" ] || fail "the agent does not work"

printf '%s slots=1 iface=lan1\n%s\n' "$A" "$B" >"$WORK/hosts"

# Up-front checks: one line naming the host and why, exit 2, no run.
check_refused()
{
	local what=$1 want=$2
	shift 2
	timeout 120 "$top/npb-runs/run" --quick --bench is --no-setup --results "$WORK/bad" "$@" >"$WORK/o" 2>&1
	local rc=$?
	[ $rc -eq 2 ] && grep -q -- "$want" "$WORK/o" || fail "$what: exit $rc, expected 2 and '$want': $(cat "$WORK/o")"
	! grep -q '\[1/' "$WORK/o" || fail "$what: a benchmark was started"
	rm -rf "$WORK/bad"
}
check_refused "missing interface" "npb-runs/run: host $B: interface lan9 does not exist" \
	--hosts "$WORK/hosts" --iface lan9 --rsh "$AGENT"
ip -n "$B" link set lan2 mtu 1400
check_refused "MTU mismatch" "host $B: lan2 has MTU 1400, but 1500 (host $A, lan1)" \
	--hosts "$WORK/hosts" --iface lan2 --rsh "$AGENT"
ip -n "$B" link set lan2 mtu 1500
printf '%s iface=lan1\n%s-none iface=lan1\n' "$A" "$id" >"$WORK/hosts.bad"
check_refused "unreachable host" "host $id-none: cannot run a command there" \
	--hosts "$WORK/hosts.bad" --rsh "$AGENT"
check_refused "shaping real hosts" "--rate shape(s) the virtual cluster" \
	--hosts "$WORK/hosts" --iface lan2 --rsh "$AGENT" --rate 1gbit
ok "up-front checks: missing interface, MTU mismatch, unreachable host, --rate refused"

# Each process the launchers start gets its own host's interface.
(
	. "$top/tools/gamma-env.sh"
	. "$top/tools/lib/hosts.sh"
	mkdir -p "$WORK/lib"
	hosts_load "$WORK/hosts" lan2 "$AGENT" && hosts_probe "$WORK/lib" && hosts_write "$WORK/lib" 1 ||
		fail "hosts.sh: $HOSTS_ERROR"
	hosts_ompi 2
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 "${HOSTS_CMD[@]}" \
		sh -c 'echo "$(hostname) $OMPI_MCA_btl_gamma_if_include $FI_GAMMA_IFACE"' | sort >"$WORK/env.ompi"
	printf '%s lan1 lan1\n%s lan2 lan2\n' "$A" "$B" | cmp -s - "$WORK/env.ompi" ||
		fail "mpirun: processes got '$(cat "$WORK/env.ompi")'"
	if command -v mpiexec.hydra >/dev/null; then
		hosts_mpich 2
		timeout 60 "${HOSTS_CMD[@]}" sh -c 'echo "$(hostname) $UCX_NET_DEVICES"' | sort >"$WORK/env.mpich"
		printf '%s lan1\n%s lan2\n' "$A" "$B" | cmp -s - "$WORK/env.mpich" ||
			fail "hydra: processes got '$(cat "$WORK/env.mpich")'"
	fi
) || exit 1
ok "mpirun (and hydra) start each process with its host's interface"

# npb-runs/run on these hosts, end to end.
tx0=$(cat "/sys/class/net/$B-p/statistics/tx_bytes")
res=$WORK/res
timeout 300 "$top/npb-runs/run" --hosts "$WORK/hosts" --iface lan2 --rsh "$AGENT" --quick --bench is,cg \
	--no-setup --results "$res" >"$WORK/out" 2>&1
rc=$?
cat "$WORK/out"
[ $rc -eq 0 ] || fail "npb-runs/run --hosts exited $rc"
for b in IS CG; do
	for t in gamma ompi-tcp; do
		grep -Eq "^$b +S +2 +$t +[0-9.]+ +[0-9.]+ +SUCCESSFUL " "$WORK/out" || fail "no verified row for $b S $t"
		grep -qx ' Verification    =               SUCCESSFUL' "$res/logs/${b,,}.S.$t.1.log" ||
			fail "logs/${b,,}.S.$t.1.log has no SUCCESSFUL verification"
	done
done
[ "$(tail -n +2 "$res/results.csv" | grep -c ',yes$')" -eq 4 ] || fail "CSV: $(cat "$res/results.csv")"
[ "$(head -c 8 "$res/chart.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "no PNG chart"
for h in "$A lan1" "$B lan2"; do
	grep -Eq "^${h% *} +${h#* } +1500 +[^ ]+ +[0-9]+ +$net\.[12]/24 +root +$(uname -r)\$" "$res/run.txt" ||
		fail "run.txt does not record host '$h': $(cat "$res/run.txt")"
done
grep -q "^hosts: $WORK/hosts through '$AGENT'" "$res/run.txt" || fail "run.txt names no hosts file"
# The runs crossed the hosts' link: host B received the traffic.
tx1=$(cat "/sys/class/net/$B-p/statistics/tx_bytes")
[ $((tx1 - tx0)) -ge 100000 ] || fail "only $((tx1 - tx0)) bytes went to host $B"
ok "npb-runs/run --hosts: 4 verified rows, CSV, chart, hosts recorded, $((tx1 - tx0)) bytes to $B"

# gamma-faults on the same hosts: clean links only (nothing shaped there).
"$top/experiments/faults/gamma-faults" --hosts "$WORK/hosts" --iface lan2 --rsh "$AGENT" --faults loss1 >"$WORK/o" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "fault 'loss1' shapes the links" "$WORK/o" || fail "gamma-faults --hosts loss1: exit $rc: $(cat "$WORK/o")"
NPB_BINDIR=$build/npb-runs/bin timeout 300 "$top/experiments/faults/gamma-faults" --hosts "$WORK/hosts" --iface lan2 \
	--rsh "$AGENT" --quick --np 2 --faults clean --assert >"$WORK/faults.log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "gamma-faults --hosts --faults clean exited $rc: $(tail -20 "$WORK/faults.log")"
grep -Eq '^\| clean +\| +2 \| +2/2 \|' "$WORK/faults.log" || fail "gamma-faults: no verified clean row: $(cat "$WORK/faults.log")"
ok "gamma-faults --hosts: shaped faults refused, IS and CG verified on clean links"

# gamma-bench on the same two hosts.
if [ -x "$build/experiments/pingpong/gamma-pingpong" ] && command -v mpicc.mpich >/dev/null &&
	command -v mpiexec.hydra >/dev/null && [ -x /usr/bin/time ]; then
	timeout 600 "$top/experiments/perf/gamma-bench" --hosts "$WORK/hosts" --iface lan2 --rsh "$AGENT" --quick \
		--out "$WORK/bench" >"$WORK/bench.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "gamma-bench --hosts exited $rc: $(tail -30 "$WORK/bench.log")"
	grep -q '^gamma-bench: every run verified its data$' "$WORK/bench.log" || fail "gamma-bench: no verdict"
	for st in lf-gamma lf-tcp mpi-gamma mpi-tcp mpich-tcp; do
		for t in latency,8 bandwidth,1048576 msgrate,8; do
			grep -q "^hosts,$st,$t,[0-9.]*," "$WORK/bench/results.csv" || fail "gamma-bench: no $st $t row"
		done
	done
	grep -q "^$B " "$WORK/bench/hosts.txt" || fail "gamma-bench recorded no hosts"
	# The raw-frame floor on the hosts' own link (root here: it must run).
	grep -q '^hosts,floor,latency,8,[0-9.]*,' "$WORK/bench/results.csv" || fail "gamma-bench: no floor latency row"
	for st in floor floor-mmsg; do
		grep -q "^hosts,$st,bandwidth,[1-9][0-9]*,[0-9.]*," "$WORK/bench/results.csv" ||
			fail "gamma-bench: no $st bandwidth row"
		grep -q '^# verified: every byte of [1-9][0-9]* frames' "$WORK/bench/hosts.$st.bw.cli" ||
			fail "gamma-bench: $st verified no frames"
	done
	ok "gamma-bench --hosts: every stack and the raw-frame floor verified their data"
else
	echo "note: gamma-bench part skipped (gamma-pingpong, MPICH or /usr/bin/time missing)"
fi
