# Two ranks on this host, each on one end of a fresh veth pair (sourced,
# not run, with $top set; by btl-gamma-smoke.sh, btl-lost.sh and
# btl-outrun.sh).  Brings fail, skip and Open MPI's launcher (mpi_ompi).
#
#   vethpair_up PREFIX
#
# Skips without root, creates the pair PREFIXa$$/PREFIXb$$ (VP_A, VP_B;
# removed on exit with the scratch directory VP_TMP), skips while the
# gamma provider offers no domain for it, and builds mpi/btl-smoke.c as
# $VP_TMP/btl-smoke.
. "$top/tools/gamma-env.sh"
# shellcheck source=../../tools/lib/mpi.sh
. "$top/tools/lib/mpi.sh"
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

vethpair_up()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root (veth pair, CAP_NET_RAW)"
	VP_TMP=$(mktemp -d "/tmp/$1.XXXXXX")
	VP_A=$1a$$
	VP_B=$1b$$
	VP_A=${VP_A:0:15}
	VP_B=${VP_B:0:15}
	trap 'ip link del "$VP_A" 2>/dev/null; rm -rf "$VP_TMP"' EXIT
	ip link add "$VP_A" type veth peer name "$VP_B" || skip "cannot create a veth pair"
	ip link set "$VP_A" up && ip link set "$VP_B" up || fail "cannot bring $VP_A/$VP_B up"

	local offered mpicc=${MPICC:-mpicc.openmpi}
	offered=$(FI_GAMMA_IFACE="$VP_A,$VP_B" timeout 30 fi_info -p gamma 2>/dev/null)
	grep -q "domain: $VP_A\$" <<<"$offered" && grep -q "domain: $VP_B\$" <<<"$offered" ||
		skip "provider gamma offers no domain for $VP_A/$VP_B yet (fi_info -p gamma)"
	command -v "$mpicc" >/dev/null || mpicc=mpicc
	"$mpicc" -O2 -o "$VP_TMP/btl-smoke" "$top/mpi/btl-smoke.c" || fail "cannot build btl-smoke"
}
