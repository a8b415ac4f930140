#!/bin/bash
# fi_getinfo of provider gamma through the fi_info tool: one FI_EP_RDM entry
# per interface, hints honoured, endpoint types gamma does not offer refused
# (so no utility provider layers on top of it), the advertised capabilities.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (creates a veth pair)"; exit 77; }
command -v fi_info >/dev/null || { echo "SKIP: fi_info not installed (libfabric-bin)"; exit 77; }
. "$top/tools/gamma-env.sh"

a=ggi$$a b=ggi$$b
trap 'ip link del "$a" 2>/dev/null' EXIT
ip link add "$a" type veth peer name "$b" && ip link set "$a" up && ip link set "$b" up || exit 1
export FI_GAMMA_IFACE=$a,$b

n=$(fi_info -p gamma | grep -c 'provider: gamma')
[ "$n" = 2 ] || fail "expected 2 entries (one per interface), got $n"
[ "$(fi_info -p gamma -t FI_EP_RDM | grep -c 'type: FI_EP_RDM')" = 2 ] || fail "no FI_EP_RDM entries"
for t in FI_EP_MSG FI_EP_DGRAM; do
	fi_info -p gamma -t $t >/dev/null 2>&1 && fail "gamma answered a request for $t"
done
fi_info -p "gamma;ofi_rxm" >/dev/null 2>&1 && fail "ofi_rxm layered on gamma"
fi_info -p "gamma;ofi_rxd" >/dev/null 2>&1 && fail "ofi_rxd layered on gamma"
fi_info -p gamma -c FI_RMA >/dev/null 2>&1 && fail "gamma claimed FI_RMA"
[ "$(fi_info -p gamma -c "FI_TAGGED|FI_MSG|FI_DIRECTED_RECV" | grep -c 'provider: gamma')" = 2 ] ||
	fail "FI_TAGGED|FI_MSG|FI_DIRECTED_RECV hints not met"
d=$(fi_info -p gamma -d "$b" | awk '/domain:/ {print $2}')
[ "$d" = "$b" ] || fail "domain hint $b gave '$d'"
fi_info -p gamma -d nosuchif0 >/dev/null 2>&1 && fail "unknown domain answered"
v=$(fi_info -p gamma -d "$a" -v)
for want in FI_MSG FI_TAGGED FI_DIRECTED_RECV FI_MULTI_RECV FI_SOURCE FI_LOCAL_COMM FI_REMOTE_COMM \
	FI_ORDER_SAS FI_PROGRESS_MANUAL 'mem_tag_format: 0xaaaaaaaaaaaaaaaa' 'cq_data_size: 8' \
	'threading: FI_THREAD_SAFE' 'mr_mode: \[  \]'; do
	grep -q -- "$want" <<<"$v" || fail "fi_info -v does not show '$want'"
done

# Settings the user got wrong are said on stderr (libfabric's log is off by
# default), and the defaults kept.
for bad in FI_GAMMA_WINDOW=-5 FI_GAMMA_RX_RING=abc FI_GAMMA_RNDV_THRESHOLD=64k FI_GAMMA_ETHERTYPE=5 \
	FI_GAMMA_PEER_TIMEOUT=1e3 FI_GAMMA_DEFAULT_CLASS=medium; do
	err=$(env "$bad" fi_info -p gamma 2>&1 >/dev/null)
	grep -q "^libfabric gamma: $bad: expected .*; using " <<<"$err" ||
		fail "$bad: no clear message on stderr (got '$err')"
	[ "$(env "$bad" fi_info -p gamma 2>/dev/null | grep -c 'provider: gamma')" = 2 ] ||
		fail "$bad: the provider did not carry on with its default"
done
[ -z "$(FI_GAMMA_WINDOW=0x40 FI_GAMMA_RNDV_THRESHOLD=65536 fi_info -p gamma 2>&1 >/dev/null)" ] ||
	fail "good numbers (0x40, 65536) drew a complaint"
# FI_GAMMA_IFACE naming nothing on this host: said once, nothing offered;
# naming other hosts' interfaces beside one of ours: quiet.
err=$(FI_GAMMA_IFACE=nosuch0,nosuch1 fi_info -p gamma 2>&1)
grep -q "^libfabric gamma: FI_GAMMA_IFACE=nosuch0,nosuch1: none of these is an Ethernet interface that is up on this host" <<<"$err" ||
	fail "FI_GAMMA_IFACE of missing interfaces: no clear message (got '$err')"
grep -q 'provider: gamma' <<<"$err" && fail "FI_GAMMA_IFACE of missing interfaces offered a domain"
err=$(FI_GAMMA_IFACE=nosuch0,$a fi_info -p gamma 2>&1 >/dev/null)
[ -z "$err" ] || fail "FI_GAMMA_IFACE with one of ours present complained: '$err'"
echo "ok: fi_getinfo answers, refuses and describes as documented; wrong settings are said on stderr"
