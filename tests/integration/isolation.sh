#!/bin/bash
# Job isolation by auth_key.
#  1. libfabric level (gm-keytest over a veth pair): endpoints with the same
#     key exchange verified messages; endpoints with different keys, set at
#     domain or endpoint level, exchange nothing (their sends fail), and the
#     receivers count the frames as bad_key (FI_GAMMA_STATS); the same
#     with 32-byte secrets (MACs), and an endpoint switched by fi_setopt.
#  2. MPI level: two jobs at once over btl gamma on the same 2-node cluster
#     links, each exchanging verified data (experiments/faults/gm-mpi-soak) until
#     both have verified their first round, so they overlap on any machine;
#     both verify, and each job's ranks share one key that differs from the
#     other job's (the id of btl gamma's random per-job secret).
. "$(dirname "$0")/cluster-lib.sh" is
KEYTEST=$BUILT/tools/gm-keytest
[ -x "$KEYTEST" ] || fail "$KEYTEST not built (make check builds it)"
. "$top/tools/gamma-env.sh"
FI_GAMMA_IFACE= timeout 30 fi_info -p gamma >/dev/null 2>&1 ||
	skip "provider gamma not loadable (fi_info -p gamma)"

# ---- 1. libfabric level ----
a=ik${NAME}a b=ik${NAME}b
icleanup()
{
	ip link del "$a" 2>/dev/null
	cleanup
}
trap icleanup EXIT
ip link add "$a" type veth peer name "$b" || fail "veth $a"
ip link set "$a" up && ip link set "$b" up || fail "veth up"
out=$(FI_GAMMA_IFACE=$a,$b FI_GAMMA_STATS=1 FI_GAMMA_PEER_TIMEOUT=1000 \
	timeout 300 "$KEYTEST" "$a" "$b" 2>&1) || fail "gm-keytest: $out"
echo "$out"
grep -q '^ok: same key delivers' <<<"$out" || fail "gm-keytest printed no verdict"
# bad_key counted: by C and D on $b (A's frames), by A on $a (C's frames).
badkey() { grep "^gamma stats $1:" <<<"$out" | sed -E 's/.* key ([0-9]+) version.*/\1/' |
	awk '{s += $1} END {print s + 0}'; }
kb=$(badkey "$b") ka=$(badkey "$a")
[ "$kb" -ge 6 ] || fail "frames with a foreign key not counted on $b: bad_key $kb"
[ "$ka" -ge 3 ] || fail "frames with a foreign key not counted on $a: bad_key $ka"
ok "libfabric: same key delivers; different keys isolate; bad_key $kb on $b, $ka on $a"
# The same with 32-byte secrets (a MAC on every frame), and fi_setopt.
out=$(FI_GAMMA_IFACE=$a,$b FI_GAMMA_STATS=1 FI_GAMMA_PEER_TIMEOUT=1000 \
	timeout 300 "$KEYTEST" --secret "$a" "$b" 2>&1) || fail "gm-keytest --secret: $out"
echo "$out"
grep -q '^ok: same secret delivers' <<<"$out" || fail "gm-keytest --secret printed no verdict"
kb=$(badkey "$b") ka=$(badkey "$a")
[ "$kb" -ge 6 ] && [ "$ka" -ge 3 ] ||
	fail "frames under a foreign secret not counted as bad_key: $kb on $b, $ka on $a"
grep "^gamma stats" <<<"$out" | grep -q ' bad mac 0;' ||
	fail "frames under the right secret failed the MAC: $(grep '^gamma stats' <<<"$out")"
grep -q 'binds a peer to its secret' <<<"$out" || fail "gm-keytest --secret: no peer binding: $out"
ok "libfabric: same secret delivers; different secrets isolate; fi_setopt switches, and binds a peer"
# FI_GAMMA_REQUIRE_AUTH=1: an endpoint with a 4-byte key is refused.
out=$(FI_GAMMA_IFACE=$a,$b FI_GAMMA_REQUIRE_AUTH=1 timeout 60 "$KEYTEST" "$a" "$b" 2>&1) &&
	fail "FI_GAMMA_REQUIRE_AUTH=1 opened endpoints without a secret: $out"
grep -q 'FAIL: fi_endpoint.*Permission denied' <<<"$out" ||
	fail "FI_GAMMA_REQUIRE_AUTH=1: not refused at fi_endpoint: $out"
ok "FI_GAMMA_REQUIRE_AUTH=1 refuses an endpoint without a secret"

# ---- 2. two MPI jobs at once on the same links ----
command -v mpirun >/dev/null || skip "mpirun not installed"
command -v unshare >/dev/null || skip "unshare not installed"
SOAK=$BUILT/../experiments/faults/gm-mpi-soak
[ -x "$SOAK" ] || fail "$SOAK not built (make check builds it)"
up "$NAME" --nodes 2 --netns
n0=gc-$NAME-n0 n1=gc-$NAME-n1
mpi_cluster "$NAME" || fail "$CLUSTER_ERROR"
job() {
	FI_GAMMA_STATS=1 timeout 300 "${MPI_CMD[@]}" -np 2 \
		"${MPI_BTL_GAMMA[@]}" --mca btl_gamma_if_include "$n0,$n1" \
		--mca btl_base_verbose 10 \
		-x FI_GAMMA_STATS \
		"$SOAK" "$WORK/ready$1" "$WORK/stop$1" >"$WORK/job$1.out" 2>&1
}
# Job 2 starts once job 1 exchanges: the nodes share this machine's /tmp,
# and two orteds starting at once on one node race to create Open MPI's
# session directory /tmp/ompi.NODE.0 (ORTE checks, then mkdir; the loser
# dies with "File exists").  Once job 1 runs, the directory stands.
job 1 &
p1=$!
BGPIDS="$BGPIDS $p1"
wait_for -t 120 "$p1" test -e "$WORK/ready1" ||
	fail "job 1 did not start exchanging: $WAIT_ERROR: $(tail -n 30 "$WORK/job1.out")"
job 2 &
p2=$!
BGPIDS="$BGPIDS $p2"
# Both jobs exchange at once before either is told to stop.
wait_for -t 120 "$p1 $p2" test -e "$WORK/ready2" ||
	fail "the two jobs did not run at once: $WAIT_ERROR: $(tail -n 30 "$WORK/job1.out" "$WORK/job2.out")"
touch "$WORK/stop1" "$WORK/stop2"
wait $p1
r1=$?
wait $p2
r2=$?
for j in 1 2; do
	o=$(cat "$WORK/job$j.out")
	rc=$r1
	[ $j = 2 ] && rc=$r2
	[ "$rc" -eq 0 ] || fail "job $j failed (rc $rc): $(tail -30 <<<"$o")"
	grep -q '^gm-mpi-soak: ok: ' <<<"$o" || fail "job $j did not verify its data: $(tail -30 <<<"$o")"
	keys=$(grep -o 'job key 0x[0-9a-f]*' <<<"$o" | awk '{print $3}' | sort -u)
	[ "$(grep -c 'job key' <<<"$o")" -eq 2 ] && [ "$(wc -w <<<"$keys")" -eq 1 ] ||
		fail "job $j: its two ranks do not share one key: $(grep 'job key' <<<"$o")"
	eval "key$j=$keys"
	grep "^gamma stats" <<<"$o"
	# Both jobs' frames reached each interface's socket filter; none failed a peer.
	grep "^gamma stats" <<<"$o" | grep -qv 'peers failed 0;' && fail "job $j: a peer failed"
done
[ "$key1" != "$key2" ] || fail "the two jobs got the same key $key1"
ok "two concurrent MPI jobs on the same links verified; keys $key1 and $key2"
