#!/bin/bash
# Issue #16: an MPI job over one multi-rail btl gamma module per node
# (btl_gamma_if_include n0+n0b: the provider's rails), a verified ring of
# eager and rendezvous messages (mpi/until-stop), and rail 0's gamma
# frames cut at node 1's switch port in the middle of it: the job goes on
# verifying rounds, ends cleanly, no peer fails, and FI_GAMMA_STATS shows
# the failover.
. "$(dirname "$0")/cluster-lib.sh" mf
rails_ring
r0=$(cat "$READY")
# Cut gamma frames both ways at node 1's rail 0 port: mpirun's own TCP runs
# on rail 0's subnet and must pass, or MPI_Finalize never completes
# (mpi-rails-linkdown.sh moves it to rail 1 and takes the link down).
cut_gamma "gc-$NAME-p1"
rounds_past $((r0 + 128))
r1=$(cat "$READY")
stop_verified "with rail 0 cut"
grep -E "^gamma msg stats ${n}[01]\+${n}[01]b .*rail failovers [1-9]" <<<"$out" >/dev/null ||
	fail "no failover counted: $(grep '^gamma msg stats' <<<"$out")"
grep '^gamma stats ' <<<"$out" | grep -v 'peers failed 0;' && fail "a peer failed although rail 1 worked"
ok "rail 0 cut at round $r0: the job verified on past round $r1 over rail 1; $(grep -o 'rail failovers [0-9]*' <<<"$out" | paste -sd,)"
