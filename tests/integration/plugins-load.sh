#!/bin/bash
# Both plugins load from the build tree and list their parameters.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/gamma-env.sh"
fail() { echo "FAIL: $*"; exit 1; }

out=$(fi_info -e 2>&1) || fail "fi_info -e exited $?"
for p in IFACE ETHERTYPE DQ LOW_SHARE DEFAULT_CLASS WINDOW RTO PEER_TIMEOUT RX_RING RNDV_THRESHOLD STATS RAWD PROGRESS_IDLE IDLE_SLEEP; do
	grep -q "FI_GAMMA_$p:" <<<"$out" || fail "fi_info -e does not list FI_GAMMA_$p"
done
echo "ok: fi_info -e lists the FI_GAMMA_* parameters"

out=$(ompi_info --param btl gamma --level 9 2>&1) || fail "ompi_info exited $?"
grep -q 'MCA btl: gamma' <<<"$out" || fail "ompi_info does not list component btl gamma: $out"
for p in if_include if_exclude priority eager_limit max_send_size exclusivity latency bandwidth verbose idle_block; do
	grep -q "btl_gamma_$p\"" <<<"$out" || fail "ompi_info does not list btl_gamma_$p"
done
echo "ok: ompi_info lists btl gamma and its parameters"
