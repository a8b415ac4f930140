#!/bin/bash
# Hostile frames during an MPI job: NPB CG class W runs over btl gamma on a
# 2-node --netns cluster while gm-inject, on a third interface on the same
# bridge (its own namespace), fires random and malformed gamma frames at
# both nodes (bad lengths, versions, types, checksums, keys, forged ports,
# out-of-window sequence numbers with the job's own key, random bytes),
# aimed at the job's live ports, which it learns the way a local user can:
# from the port reservations in /proc/net/unix of the node's namespace.
# The job must verify, and FI_GAMMA_STATS must show the bad frames counted
# on both nodes with no peer failed.
. "$(dirname "$0")/cluster-lib.sh" hs
INJECT=$BUILT/tools/gm-inject
[ -x "$INJECT" ] || fail "$INJECT not built (make check builds it)"
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v unshare >/dev/null || skip "unshare not installed"
. "$top/tools/gamma-env.sh"
CG=
for d in "$BUILT/../npb-runs/bin" "$top/npb-runs/bin"; do
	[ -z "$CG" ] && [ -x "$d/cg" ] && CG=$d/cg
done
[ -n "$CG" ] || skip "NPB cg not built (make in npb-runs)"
FI_GAMMA_IFACE= timeout 30 fi_info -p gamma >/dev/null 2>&1 ||
	skip "provider gamma not loadable (fi_info -p gamma)"

up "$NAME" --nodes 2 --netns
n0=gc-$NAME-n0 n1=gc-$NAME-n1
# The hostile station: a veth on the cluster bridge, its far end in our namespace.
hns=hi-$NAME hif=hi${NAME}a hbr=hi${NAME}b
hcleanup()
{
	ip netns del "$hns" 2>/dev/null
	ip link del "$hbr" 2>/dev/null
	cleanup
}
trap hcleanup EXIT
ip netns add "$hns" || fail "netns add $hns"
ip link add "$hbr" type veth peer name "$hif" netns "$hns" || fail "veth $hbr"
ip link set "$hbr" master "gc-$NAME-br" up || fail "attach $hbr to the bridge"
ip -n "$hns" link set "$hif" up || fail "$hif up"

mac() { ip -n "$1" -br link show dev "$1" | awk '{print $3}'; }
macs=$(mac "$n0"),$(mac "$n1")
# Live gamma ports of node $1.  The job runs as root, whose port reservations
# are files /run/gamma/NETNS-ETHERTYPE-IFINDEX-PORT that only root can read
# (provider/gm_portres.c; NETNS: the inode of the node's network namespace).
ports() { ls /run/gamma 2>/dev/null | awk -F- -v ns="$(stat -Lc %i "/run/netns/$1")" '$1 == ns {print $4}'; }

hf=$("$GC" hostfile "$NAME") || fail "hostfile"
sub=$("$GC" subnet "$NAME") || fail "subnet"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FI_GAMMA_STATS=1 \
	timeout 240 mpirun --hostfile "$hf" -np 2 --bind-to none \
	--mca plm_rsh_agent "$RSH" --mca oob_tcp_if_include "$sub" \
	--mca pml ob1 --mca btl self,vader,gamma --mca btl_gamma_if_include "$n0,$n1" \
	--mca btl_base_verbose 10 \
	-x FI_PROVIDER_PATH -x OMPI_MCA_mca_base_component_path -x FI_GAMMA_STATS \
	"$CG" W >"$WORK/job.out" 2>&1 &
job=$!
BGPIDS="$BGPIDS $job"

# Fire while the job lives: rediscover its ports, then a one-second volley.
aimed=0 t0=$SECONDS
while kill -0 $job 2>/dev/null && [ $((SECONDS - t0)) -lt 240 ]; do
	p=$( (ports "$n0"; ports "$n1") | sort -u | paste -sd,)
	# Until the job has opened its ports, watch closely rather than fire blind.
	[ -z "$p" ] && { sleep 0.05; continue; }
	key=$(grep -o 'job key 0x[0-9a-f]*' "$WORK/job.out" | head -1 | awk '{print $3}')
	args=(-i "$hif" -m "$macs" -p "$p" -r 4000 -t 1)
	aimed=$((aimed + 1))
	[ -n "$key" ] && args+=(-k "$key")
	ip netns exec "$hns" timeout 10 "$INJECT" "${args[@]}" >>"$WORK/inject.out" 2>&1 ||
		fail "gm-inject failed: $(tail -3 "$WORK/inject.out")"
done
wait $job
rc=$?
out=$(cat "$WORK/job.out")
[ $rc -eq 0 ] || fail "the MPI job failed under hostile frames (rc $rc): $(tail -30 <<<"$out")"
grep -q 'Verification    =               SUCCESSFUL' <<<"$out" ||
	fail "CG did not verify: $(tail -30 <<<"$out")"
[ $aimed -gt 0 ] || fail "the job ended before its ports showed up in /proc/net/unix"
tail -2 "$WORK/inject.out"
# Sum a counter over a stats line: "... bad csum A hdr B port C key D version E ..."
for n in "$n0" "$n1"; do
	line=$(grep "^gamma stats $n:" <<<"$out") || fail "no FI_GAMMA_STATS line for $n: $out"
	echo "$line"
	read -r csum hdr key ver failed < <(sed -E 's/.*bad csum ([0-9]+) hdr ([0-9]+) port [0-9]+ key ([0-9]+) version ([0-9]+);.*peers failed ([0-9]+).*/\1 \2 \3 \4 \5/' <<<"$line")
	[ "${csum:-0}" -gt 0 ] && [ "${key:-0}" -gt 0 ] && [ "${ver:-0}" -gt 0 ] ||
		fail "$n: hostile frames not counted (bad csum '$csum' key '$key' version '$ver')"
	[ "$failed" = 0 ] || fail "$n: hostile frames failed a real peer ($failed)"
done
ok "CG class W verified over gamma under $aimed one-second volleys at its live ports; bad frames counted on both nodes"
