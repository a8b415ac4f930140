# Helpers for tests that need a faulty Ethernet link (sourced, not run).
#
# This machine's kernel has no sch_netem, so faults cannot be added with
# `tc qdisc ... netem`.  Instead gm-faultwire (experiments/faults/gm-faultwire.c)
# relays real Ethernet frames between two veth pairs and applies the faults
# in userspace:
#
#   $FW_A ── veth ── $FW_IA [gm-faultwire] $FW_IB ── veth ── $FW_B
#
#   . "$(dirname "$0")/faultwire-lib.sh"
#   fw_up NAME [--mtu N] [gm-faultwire options...]   e.g. fw_up pv --loss 5
#   ... use $FW_A and $FW_B (two interfaces in this namespace) ...
#   fw_down                      stop the relay, delete the veths; sets FW_COUNTERS
#   fw_counter 1to2|2to1 NAME    a relay counter from the last fw_down
#
# fw_down is idempotent and safe in an EXIT trap; fw_up installs
# `trap fw_down EXIT` itself when the caller has no EXIT trap (a caller with
# its own trap must call fw_down from it).  One wire at a time per shell.
# Needs root; fw_up returns 1 with a message on any failure.

_fw_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${FW_BIN:-}" ]; then
	for _fw_try in "${GM_TESTS_BUILDDIR:-$PWD}/../experiments/faults/gm-faultwire" \
		"$_fw_here/../../experiments/faults/gm-faultwire"; do
		[ -x "$_fw_try" ] && { FW_BIN=$_fw_try; break; }
	done
fi
FW_BIN=${FW_BIN:-gm-faultwire}
FW_A= FW_B= FW_IA= FW_IB= FW_PID= FW_DIR= FW_COUNTERS=

# Keep the kernel's own traffic (IPv6 router solicitations...) off the wire.
_fw_quiet() { [ -w "/proc/sys/net/ipv6/conf/$1/disable_ipv6" ] && echo 1 >"/proc/sys/net/ipv6/conf/$1/disable_ipv6"; true; }

fw_up()
{
	local name=${1:?fw_up NAME [--mtu N] [options]} mtu=1500 base i
	shift
	if [ "${1:-}" = --mtu ]; then
		mtu=${2:?--mtu wants a value}
		shift 2
	fi
	[ -z "$FW_A" ] || { echo "fw_up: a wire is already up ($FW_A)" >&2; return 1; }
	[ -x "$FW_BIN" ] || command -v "$FW_BIN" >/dev/null ||
		{ echo "fw_up: gm-faultwire not found (make check builds it; or set FW_BIN)" >&2; return 1; }
	# fw + 4 + 5 + 1 chars: within the 15-character limit, unique per process.
	base=fw${name:0:4}$(($$ % 100000))
	FW_A=${base}a FW_IA=${base}i FW_IB=${base}j FW_B=${base}b
	[ "$(trap -p EXIT)" ] || trap fw_down EXIT
	FW_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fw-$base.XXXXXX") || return 1
	ip link add "$FW_A" mtu "$mtu" type veth peer name "$FW_IA" mtu "$mtu" &&
		ip link add "$FW_IB" mtu "$mtu" type veth peer name "$FW_B" mtu "$mtu" ||
		{ echo "fw_up: cannot create veths $FW_A/$FW_IA, $FW_IB/$FW_B" >&2; fw_down; return 1; }
	for i in "$FW_A" "$FW_IA" "$FW_IB" "$FW_B"; do
		_fw_quiet "$i"
		ip link set "$i" up || { echo "fw_up: cannot bring $i up" >&2; fw_down; return 1; }
	done
	"$FW_BIN" "$@" "$FW_IA" "$FW_IB" >"$FW_DIR/out" 2>"$FW_DIR/err" &
	FW_PID=$!
	# Frames sent before the relay's sockets are bound would be lost.
	for i in $(seq 100); do
		grep -q '^gm-faultwire: ready' "$FW_DIR/out" 2>/dev/null && return 0
		kill -0 "$FW_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "fw_up: gm-faultwire did not start: $(cat "$FW_DIR/err")" >&2
	fw_down
	return 1
}

fw_down()
{
	local i
	if [ -n "$FW_PID" ]; then
		kill -TERM "$FW_PID" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$FW_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$FW_PID" 2>/dev/null
		wait "$FW_PID" 2>/dev/null
		FW_PID=
	fi
	if [ -n "$FW_DIR" ]; then
		FW_COUNTERS=$(grep '^gm-faultwire: .*received=' "$FW_DIR/out" 2>/dev/null)
		[ -s "$FW_DIR/err" ] && sed 's/^/  relay: /' "$FW_DIR/err" >&2
		rm -rf "$FW_DIR"
		FW_DIR=
	fi
	# Deleting one end of a veth pair deletes both.
	for i in "$FW_A" "$FW_B"; do
		[ -n "$i" ] && ip link del "$i" 2>/dev/null
	done
	FW_A= FW_B= FW_IA= FW_IB=
	true
}

# fw_counter 1to2|2to1 NAME: NAME's value in the last fw_down's counters
# (1to2 is the direction from $FW_A to $FW_B).
fw_counter()
{
	local n=1
	[ "$1" = 2to1 ] && n=2
	sed -n "${n}p" <<<"$FW_COUNTERS" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
