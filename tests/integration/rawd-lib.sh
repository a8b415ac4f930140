# Shared by the gamma-rawd tests (sourced after cluster-lib.sh, with RAWD
# naming the helper and WORK a scratch directory).  A setcap'd helper
# refuses GAMMA_RAWD_CONF unless the real uid is 0, so a test that runs it
# as another user gives it a configuration at its compiled-in path instead:
# in a private mount namespace, an overlay over that path's nearest existing
# directory holds the test's file.  Nothing outside the namespace changes.

RAWD_DEFAULT_CONF=$("$RAWD" </dev/null 2>&1 | sed -n 's/^  Configuration: \([^ ]*\) (.*/\1/p')
[ -n "$RAWD_DEFAULT_CONF" ] || fail "cannot learn the helper's configuration path from its usage"
command -v unshare >/dev/null || skip "'unshare' not installed (util-linux)"
RAWD_CONF_MNT=$(dirname "$RAWD_DEFAULT_CONF")
while [ ! -d "$RAWD_CONF_MNT" ]; do RAWD_CONF_MNT=$(dirname "$RAWD_CONF_MNT"); done

# rawd_conf_ns FILE CMD...: run CMD in a private mount namespace where FILE
# is at $RAWD_DEFAULT_CONF.  RAWD_FILE_OWNER / RAWD_DIR_OWNER (default root)
# own the file and its directory there.
rawd_conf_ns()
{
	local file=$1 ov
	shift
	ov=$(mktemp -d "$WORK/rawd-ov.XXXXXX") && mkdir "$ov/u" "$ov/w" &&
		chmod --reference="$RAWD_CONF_MNT" "$ov/u" && chown --reference="$RAWD_CONF_MNT" "$ov/u" ||
		fail "rawd_conf_ns: scratch directories in $WORK"
	unshare --mount --propagation private sh -c '
		mount -t overlay gamma-rawd-test -o "lowerdir=$1,upperdir=$6/u,workdir=$6/w" "$1" &&
			mkdir -p "$(dirname "$2")" && cp "$3" "$2" && chmod 644 "$2" &&
			chown "$4" "$2" && chown "$5" "$(dirname "$2")" ||
			{ echo "rawd_conf_ns: cannot put a configuration at $2"; exit 125; }
		shift 6
		exec "$@"' sh "$RAWD_CONF_MNT" "$RAWD_DEFAULT_CONF" "$file" "${RAWD_FILE_OWNER:-0}" \
		"${RAWD_DIR_OWNER:-0}" "$ov" "$@"
}
out=$(rawd_conf_ns /dev/null true 2>&1) ||
	skip "cannot put a test configuration at $RAWD_DEFAULT_CONF (overlay in a private mount namespace): $out"
