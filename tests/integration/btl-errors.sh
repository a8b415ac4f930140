#!/bin/bash
# When gamma cannot run, the job still runs over the other BTLs (every byte
# checked by btl-smoke) and each rank prints one line saying what is wrong
# and how to fix it: interface that does not exist, interface down,
# provider not found.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/gamma-env.sh"
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep the data path off gamma's stand-in: this test is about gamma itself.

tmp=$(mktemp -d /tmp/btl-errors.XXXXXX)
veth=
cleanup() {
	[ -n "$veth" ] && ip link del "$veth" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

mpicc=${MPICC:-mpicc.openmpi}
command -v "$mpicc" >/dev/null || mpicc=mpicc
"$mpicc" -O2 -o "$tmp/btl-smoke" "$top/tests/mpi/btl-smoke.c" || fail "cannot build btl-smoke"

# run NAME EXPECTED-REGEX [mpirun args...]: the job passes over self,vader,tcp
# and prints the expected line from every rank.
run() {
	local name=$1 want=$2 out rc
	shift 2
	out=$(timeout 120 mpirun -np 2 --bind-to none --mca pml ob1 \
		--mca btl self,vader,tcp,gamma "$@" "$tmp/btl-smoke" 1048576 2>&1)
	rc=$?
	[ $rc -eq 0 ] || fail "$name: job failed (rc $rc): $out"
	grep -q '^btl-smoke: OK$' <<<"$out" || fail "$name: data not verified: $out"
	[ "$(grep -c "$want" <<<"$out")" -eq 2 ] ||
		fail "$name: expected one line per rank matching /$want/: $out"
	echo "ok: $name: $(grep -m1 "$want" <<<"$out" | cut -c1-160)"
}

run "missing interface" 'btl gamma: interface "doesnotexist0" .*does not exist.*ip link' \
	--mca btl_gamma_if_include doesnotexist0

mkdir "$tmp/noprov"
run "provider not found" \
	'btl gamma: libfabric provider "gamma" not found.*gamma-env.sh.*make install' \
	-x FI_PROVIDER_PATH="$tmp/noprov"

if [ "$(id -u)" -eq 0 ]; then
	veth=gbe$$
	veth=${veth:0:15}
	if ip link add "$veth" type veth peer name "${veth}p" 2>/dev/null; then
		want="btl gamma: interface \"$veth\" is down.*ip link set $veth up"
		run "interface down" "$want" --mca btl_gamma_if_include "$veth"
	else
		echo "skip: interface down (cannot create a veth pair here)"
		veth=
	fi
else
	echo "skip: interface down (needs root to create a veth pair)"
fi
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	# Without CAP_NET_RAW gamma cannot open raw sockets, whatever the
	# provider does about it (offer nothing, or fail at endpoint open).
	out=$(timeout 120 setpriv --bounding-set=-net_raw --inh-caps=-net_raw \
		mpirun -np 2 --bind-to none --mca pml ob1 --mca btl self,vader,tcp,gamma \
		"$tmp/btl-smoke" 1048576 2>&1) || fail "no CAP_NET_RAW: job failed: $out"
	grep -q '^btl-smoke: OK$' <<<"$out" || fail "no CAP_NET_RAW: data not verified: $out"
	[ "$(grep -c 'btl gamma: .*CAP_NET_RAW.*setcap cap_net_raw+ep.*gamma-rawd' <<<"$out")" -eq 2 ] ||
		fail "no CAP_NET_RAW: expected one line per rank naming CAP_NET_RAW, setcap and gamma-rawd: $out"
	echo "ok: no CAP_NET_RAW: $(grep -m1 CAP_NET_RAW <<<"$out" | cut -c1-160)"
else
	echo "skip: no CAP_NET_RAW (needs root and setpriv)"
fi
echo "ok: btl gamma reports what is wrong and Open MPI falls back to other BTLs"
