#!/bin/bash
# Forged messages at a running MPI job: a station on the cluster bridge that
# knows the job's key and live ports (as hostile.sh learns them) but is not
# in the job sends, at both nodes,
#   - untagged EAGER messages carrying btl gamma's header and an ob1 ACK
#     whose request pointer is garbage (delivered, they crash the rank in
#     mca_pml_ob1_recv_frag_callback_ack), and
#   - a spray of STARTs of 16 MiB medium messages with their FRAGs.
# The job (until-stop: a verified ring that runs until the test stops it)
# must verify and exit 0.  btl gamma's jobs have a secret, so the forgeries
# (right key id, no valid MAC) must be counted as bad mac on both nodes and
# dropped before any state: no peer failed or restarted, nothing held from
# unknown sources beyond FI_GAMMA_UX_UNKNOWN_MAX.  (The hold of messages
# from sources outside the AV, which a forger with the secret would meet, is
# checked at the libfabric level: gm-fitest ux-cap in provider-veth.sh.)
. "$(dirname "$0")/cluster-lib.sh" fg
INJECT=$BUILT/tools/gm-inject
[ -x "$INJECT" ] || fail "$INJECT not built (make check builds it)"
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v unshare >/dev/null || skip "unshare not installed"
mpi_build until-stop
. "$top/tools/gamma-env.sh"
cap=262144

up "$NAME" --nodes 2 --netns
n0=gc-$NAME-n0 n1=gc-$NAME-n1
hostile_station fi

macs=$(node_mac "$n0"),$(node_mac "$n1")

mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
FI_GAMMA_STATS=1 FI_GAMMA_UX_UNKNOWN_MAX=$cap until_stop -np 2 "${MPI_BTL_GAMMA[@]}" \
	--mca btl_gamma_if_include "$n0,$n1" --mca btl_base_verbose 10 \
	-x FI_GAMMA_STATS -x FI_GAMMA_UX_UNKNOWN_MAX
rounds_past 0
p=$( (live_ports "$n0"; live_ports "$n1") | sort -u | paste -sd,)
key=$(grep -o 'job key 0x[0-9a-f]*' "$WORK/job.out" | head -1 | awk '{print $3}')
[ -n "$p" ] && [ -n "$key" ] || fail "no live ports ('$p') or job key ('$key') to forge with"

for f in ob1-ack start-spray; do
	ip netns exec "$hns" timeout 30 "$INJECT" -i "$hif" -m "$macs" -p "$p" -k "$key" \
		-F $f -r 2000 -t 2 >>"$WORK/inject.out" 2>&1 ||
		fail "gm-inject -F $f failed: $(tail -3 "$WORK/inject.out")"
done
cat "$WORK/inject.out"
kill -0 $JOB 2>/dev/null || fail "the job died under forged messages: $(tail -30 "$WORK/job.out")"
stop_verified "under forged messages"
for n in "$n0" "$n1"; do
	line=$(grep "^gamma msg stats $n " <<<"$out") || fail "no FI_GAMMA_STATS msg line for $n: $out"
	echo "$line"
	read -r held rel dropped peak < <(sed -E 's/.*held ([0-9]+) released ([0-9]+) dropped ([0-9]+) \(peak ([0-9]+) B\).*/\1 \2 \3 \4/' <<<"$line")
	[ "${peak:-0}" -le $cap ] || fail "$n: $peak bytes held from unknown sources, cap $cap"
	line=$(grep "^gamma stats $n:" <<<"$out") || fail "no FI_GAMMA_STATS line for $n: $out"
	echo "$line"
	read -r failed mac restarts < <(sed -E 's/.*peers failed ([0-9]+);.*bad mac ([0-9]+);.*restarts ([0-9]+).*/\1 \2 \3/' <<<"$line")
	[ "${mac:-0}" -gt 0 ] || fail "$n: no forged frame counted as bad mac ('$mac')"
	[ "$failed" = 0 ] && [ "$restarts" = 0 ] ||
		fail "$n: forged frames failed ($failed) or restarted ($restarts) a real peer"
done
ok "job verified under $(grep -o 'forged [a-z0-9-]* [0-9]*' "$WORK/inject.out" | paste -sd,) frames; every forgery dropped as bad mac on both nodes, unknown-source memory within $cap B"
