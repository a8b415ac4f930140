# Shared by the wrappers of experiments/conformance/*'s quick modes (sourced):
#   conform_quick SCRIPT NEED PATTERN WHAT [ARGS...]
# runs experiments/conformance/SCRIPT --quick ARGS, shows its output, and
# passes when it exits 0 with exactly NEED lines matching PATTERN (its
# verdict lines); 77 (a package or root missing) skips.
conform_quick()
{
	local script=$1 need=$2 pattern=$3 what=$4 out rc
	shift 4
	command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
	out=$("$(dirname "${BASH_SOURCE[0]}")/../../experiments/conformance/$script" --quick "$@" 2>&1)
	rc=$?
	echo "$out"
	case $rc in
	0) [ "$(grep -Ec "$pattern" <<<"$out")" -eq "$need" ] ||
		{ echo "FAIL: expected $need verdict line(s) matching '$pattern'"; exit 1; }
		echo "ok: $what" ;;
	77) echo "SKIP: $(tail -1 <<<"$out")"; exit 77 ;;
	*) echo "FAIL: $what: exit $rc"; exit 1 ;;
	esac
}
