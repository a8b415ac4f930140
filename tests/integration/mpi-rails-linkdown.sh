#!/bin/bash
# Issue #16: a rail taken down by its link under MPI.  A verified ring
# (mpi/until-stop) over one multi-rail btl gamma module per node
# (btl_gamma_if_include n0+n0b,n1+n1b), with mpirun's own TCP on rail 1's
# subnet (oob_tcp_if_include), so that rail 0's link can really go: once
# the job has verified a round, node 1's rail 0 link goes down (its port on
# the switch; in a second job, the node's own interface), and 128 rounds
# later comes back up.  Each job must verify throughout and end cleanly, no
# peer may fail, and FI_GAMMA_STATS must show rail 0 given up (rails
# failed) with its frames moved on both nodes, the link-down side too, and
# revived once the link is back.
# (With mpirun's TCP on rail 0, node 1 did give rail 0 up at once, but its
# output, warnings and counters alike, sat in its orted's TCP connection on
# the dead link until the link came back.)
. "$(dirname "$0")/cluster-lib.sh" ml

# linkdown WHAT IP-LINK-SET...: the running job's rail 0 of node 1 down
# (IP-LINK-SET... down), later up again, and the checks.
linkdown()
{
	local what=$1 r0 r1 r2 seen= f m v i
	shift
	r0=$(cat "$READY")
	"$@" down || fail "cannot take $what down"
	rounds_past $((r0 + 128))
	r1=$(cat "$READY")
	# Back up: rail 0 answers again on both nodes (gamma's warnings reach
	# job.out as they come, through rail 1), and the job verifies on.
	"$@" up || fail "cannot bring $what back"
	wait_for "$JOB" revived ||
		fail "$what back: rail 0 did not answer again on both nodes: $WAIT_ERROR: $(tail -30 "$WORK/job.out")"
	r2=$(cat "$READY")
	rounds_past $((r2 + 64))
	stop_verified "with $what down and back"
	grep '^gamma stats ' <<<"$out" | grep -v 'peers failed 0;' && fail "$what: a peer failed although rail 1 worked"
	grep -E 'rail [0-9] to fi_addr' <<<"$out"
	sed -nE 's/^(gamma stats [^:]*:).*(peers failed [0-9]+);.*(rails failed [0-9]+ frames moved [0-9]+ revived [0-9]+).*/\1 \2; \3/p' <<<"$out"
	# Rail 0 of each node: "... rails failed F frames moved M revived V ...".
	# Both give it up with what they had in flight on it: node 1 when it
	# finds its link down (or, before the kernel says so, like node 0, when
	# rail 0 stops answering while rail 1 answers).
	for i in 0 1; do
		read -r f m v < <(sed -nE "s/^gamma stats ${n}$i: .*rails failed ([0-9]+) frames moved ([0-9]+) revived ([0-9]+).*/\1 \2 \3/p" <<<"$out")
		[ -n "$f" ] || fail "$what: no gamma stats for ${n}$i: $(grep '^gamma stats' <<<"$out")"
		[ "$f" -gt 0 ] && [ "$m" -gt 0 ] || fail "$what: node $i did not give rail 0 up: rails failed $f frames moved $m"
		[ "$v" -gt 0 ] || fail "$what: node $i did not count rail 0 revived"
		grep -Eq "^gamma msg stats ${n}$i\+${n}${i}b .*rail failovers [1-9]" <<<"$out" ||
			fail "$what: node $i counted no failover: $(grep '^gamma msg stats' <<<"$out")"
		seen="$seen node $i: rails failed $f frames moved $m revived $v;"
	done
	ok "$what down at round $r0, up at $r1, answering again by $r2: verified throughout;$seen $(grep -c 'rail 0 to fi_addr [0-9]* is down' <<<"$out") 'is down', $(grep -c 'rail 0 to fi_addr [0-9]* stopped answering' <<<"$out") 'stopped answering'"
}
revived() { [ "$(grep -c 'rail 0 to fi_addr [0-9]* answers again' "$WORK/job.out")" -ge 2 ]; }

rails_ring 1
linkdown "node 1's rail 0 switch port" ip link set "gc-$NAME-p1"
ring_job
linkdown "node 1's rail 0 interface" ip -n "${n}1" link set "${n}1"
