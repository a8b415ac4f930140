# Waiting for a background process to get somewhere (sourced, not run; by
# cluster-lib.sh, and by tests that do without a cluster).
#
#   wait_for [-t SECONDS] PIDS CONDITION...
#
# Runs the command CONDITION... every 0.05 s until it succeeds, then returns
# 0.  Returns 1, with WAIT_ERROR saying why, when a process of PIDS (a
# space-separated list of the caller's background jobs; may be empty) ended
# first without the condition holding, or after SECONDS (default 60): that
# is a guard against a hang on a loaded machine, never a wait the test
# relies on.  Typical:
#
#   wait_for "$pid" grep -qs '^checkpoint' "$out" || fail "no checkpoint: $WAIT_ERROR: $(cat "$out")"
WAIT_ERROR=

wait_for()
{
	local limit=60 pids pid end
	if [ "$1" = -t ]; then
		limit=$2
		shift 2
	fi
	pids=$1
	shift
	end=$((SECONDS + limit))
	while :; do
		"$@" && return 0
		for pid in $pids; do
			kill -0 "$pid" 2>/dev/null && continue
			# It may have got there and then ended.
			"$@" && return 0
			WAIT_ERROR="process $pid ended first"
			return 1
		done
		if [ $SECONDS -ge $end ]; then
			WAIT_ERROR="still not so after $limit s"
			return 1
		fi
		sleep 0.05
	done
}
