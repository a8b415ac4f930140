#!/bin/bash
# When gamma cannot run, the job still runs over the other BTLs (every byte
# checked by btl-smoke) and every rank prints one message (a topic of
# btl_gamma/help-btl-gamma.txt) saying what is wrong and how to fix it:
# interface that does not exist, interface down, provider not found, no
# CAP_NET_RAW.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/gamma-env.sh"
# shellcheck source=../../tools/lib/mpi.sh
. "$top/tools/lib/mpi.sh"
fail() { echo "FAIL: $*"; exit 1; }
mpi_ompi
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
"$mpicc" -O2 -o "$tmp/btl-smoke" "$top/mpi/btl-smoke.c" || fail "cannot build btl-smoke"

# expect NAME OUTPUT WHAT-REGEX FIX-REGEX: each of the 2 ranks printed the
# message once: its first line matches WHAT, a later line says how to fix
# it (FIX).
expect() {
	local name=$1 out=$2 what=$3 fix=$4
	[ "$(grep -c "^$what" <<<"$out")" -eq 2 ] ||
		fail "$name: expected the message /$what/ once per rank: $out"
	[ "$(grep -c -- "$fix" <<<"$out")" -eq 2 ] ||
		fail "$name: expected each rank's message to say /$fix/: $out"
	echo "ok: $name: $(grep -m1 "^$what" <<<"$out" | cut -c1-160)"
}

# run NAME WHAT-REGEX FIX-REGEX [mpirun args...]: the job passes over
# self,vader,tcp and both ranks report the problem.
run() {
	local name=$1 what=$2 fix=$3 out rc
	shift 3
	out=$(timeout 120 "${MPI_CMD[@]}" -np 2 --mca pml ob1 \
		--mca btl self,vader,tcp,gamma "$@" "$tmp/btl-smoke" 1048576 2>&1)
	rc=$?
	[ $rc -eq 0 ] || fail "$name: job failed (rc $rc): $out"
	grep -q '^btl-smoke: OK$' <<<"$out" || fail "$name: data not verified: $out"
	expect "$name" "$out" "$what" "$fix"
}

run "missing interface" \
	'btl gamma: interface "doesnotexist0" .*does not exist' 'Fix: name one that `ip link` lists' \
	--mca btl_gamma_if_include doesnotexist0

# The recipe passes FI_PROVIDER_PATH on (-x): the ranks get this one.
mkdir "$tmp/noprov"
FI_PROVIDER_PATH="$tmp/noprov" run "provider not found" \
	'btl gamma: libfabric provider "gamma" not found' \
	'Fix: `. tools/gamma-env.sh` in the gamma build tree, or `make install`'

if [ "$(id -u)" -eq 0 ]; then
	veth=gbe$$
	veth=${veth:0:15}
	if ip link add "$veth" type veth peer name "${veth}p" 2>/dev/null; then
		run "interface down" "btl gamma: interface \"$veth\" is down" \
			"Fix: \`ip link set $veth up\`" --mca btl_gamma_if_include "$veth"
		# One list may name every host's interfaces: an entry that does not
		# exist here is no error while another one does.
		ip link set "$veth" up && ip link set "${veth}p" up || fail "cannot bring $veth up"
		out=$(timeout 120 "${MPI_CMD[@]}" -np 2 --mca pml ob1 --mca btl self,vader,tcp,gamma \
			--mca btl_gamma_if_include "doesnotexist0,$veth" "$tmp/btl-smoke" 1048576 2>&1) ||
			fail "a list with one missing interface: job failed: $out"
		grep -q '^btl-smoke: OK$' <<<"$out" || fail "a list with one missing interface: data not verified: $out"
		! grep -q 'does not exist' <<<"$out" ||
			fail "a missing entry beside one that exists was reported: $out"
		echo "ok: btl_gamma_if_include doesnotexist0,$veth: the missing entry is skipped without a word"
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
		"${MPI_CMD[@]}" -np 2 --mca pml ob1 --mca btl self,vader,tcp,gamma \
		"$tmp/btl-smoke" 1048576 2>&1) || fail "no CAP_NET_RAW: job failed: $out"
	grep -q '^btl-smoke: OK$' <<<"$out" || fail "no CAP_NET_RAW: data not verified: $out"
	if grep -q "^btl gamma: this process lacks CAP_NET_RAW" <<<"$out"; then
		expect "no CAP_NET_RAW" "$out" \
			'btl gamma: this process lacks CAP_NET_RAW' \
			'Fix: run as root or `setcap cap_net_raw+ep` the program, or install$'
		[ "$(grep -c '^gamma-rawd (`make install` setcaps it)' <<<"$out")" -eq 2 ] ||
			fail "no CAP_NET_RAW: message does not name gamma-rawd: $out"
	else
		expect "no CAP_NET_RAW" "$out" \
			'btl gamma: .* permission denied (no CAP_NET_RAW)\.$' \
			'Fix: run as root or `setcap cap_net_raw+ep` the program, or let the$'
		[ "$(grep -c '^gamma-rawd helper (FI_GAMMA_RAWD)' <<<"$out")" -eq 2 ] ||
			fail "no CAP_NET_RAW: message does not name gamma-rawd: $out"
	fi
else
	echo "skip: no CAP_NET_RAW (needs root and setpriv)"
fi
echo "ok: btl gamma reports what is wrong and Open MPI falls back to other BTLs"
