#!/bin/bash
# mpirun --hostfile through gamma-rsh on a 2-node --netns cluster: one rank
# per node, data exchanged over btl tcp on the cluster subnet and verified
# byte by byte, and the two ranks report their own node names.
. "$(dirname "$0")/cluster-lib.sh" mp
HELLO=$BUILT/tools/gm-mpi-hello
[ -x "$HELLO" ] || fail "$HELLO not built (make check builds it)"
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v unshare >/dev/null || skip "unshare not installed"

up "$NAME" --nodes 2 --netns
# The agent alone: ssh-style options ignored, command words joined and run
# by a shell on the node, with the node's host name; by name and by address.
r=$(timeout 10 "$RSH" -x -o BatchMode=yes "gc-$NAME-n1" echo '"$(hostname)"' '$((6 * 7))')
[ "$r" = "gc-$NAME-n1 42" ] || fail "gamma-rsh by name: '$r'"
ip0=$(ip -n "gc-$NAME-n0" -4 -br addr show dev "gc-$NAME-n0" | awk '{print $3}')
r=$(timeout 10 "$RSH" "${ip0%/*}" hostname)
[ "$r" = "gc-$NAME-n0" ] || fail "gamma-rsh by address ${ip0%/*}: '$r'"
timeout 10 "$RSH" "gc-$NAME-n9" true 2>"$WORK/o" && fail "gamma-rsh to an unknown host succeeded"
grep -q 'unknown host' "$WORK/o" || fail "gamma-rsh unknown host: unclear message: $(cat "$WORK/o")"
ok "gamma-rsh: options, quoting, host by name and by address, unknown host refused"

mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
sub=$("$GC" subnet "$NAME") || fail "subnet"
out=$(timeout -k 10 90 "${MPI_CMD[@]}" -np 2 \
	--mca btl self,tcp --mca btl_tcp_if_include "$sub" \
	"$HELLO" 4000000 2>&1) || fail "mpirun exited $?: $out"
echo "$out"
h0=$(awk '$1 == "host" && $2 == 0 {print $3}' <<<"$out")
h1=$(awk '$1 == "host" && $2 == 1 {print $3}' <<<"$out")
[ "$h0" = "gc-$NAME-n0" ] && [ "$h1" = "gc-$NAME-n1" ] ||
	fail "ranks report hosts '$h0' and '$h1', expected gc-$NAME-n0 and gc-$NAME-n1"
grep -q 'gm-mpi-hello: ok 4000000 bytes each way with 1 peers' <<<"$out" ||
	fail "data not verified: $out"
# The data really crossed the cluster: each bridge port sent its node at least
# the 4 MB it received.
for i in 0 1; do
	tx=$(cat "/sys/class/net/gc-$NAME-p$i/statistics/tx_bytes")
	[ "$tx" -ge 4000000 ] || fail "bridge port gc-$NAME-p$i sent only $tx bytes to node $i"
done
ok "mpirun across two namespaces: ranks on $h0 and $h1, 4 MB each way verified"
