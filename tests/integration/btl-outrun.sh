#!/bin/bash
# A sender that outruns its receiver loses nothing over btl gamma.  Rank 0
# streams 20000 small messages while rank 1 stays out of MPI (mpi/outrun.c),
# so the provider on rank 1 holds them as unexpected messages until its
# per-peer cap, here 64 KiB: from there on it must refuse rank 0's frames
# and hold rank 0 back, not drop what it already acknowledged.  (Dropping
# them hung NetPIPE's stream mode: experiments/conformance/README.md.)
# Rank 1 then receives every message, in order, byte for byte.  Two ranks
# on this host, each on one end of a fresh veth pair.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=vethpair-lib.sh
. "$(dirname "$0")/vethpair-lib.sh"
vethpair_up go
a=$VP_A b=$VP_B tmp=$VP_TMP
prog=$top/mpi/outrun
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
cap=65536

mpi_ompi
# The timeout only guards the test run: a lost message would hang the job.
out=$(FI_GAMMA_IFACE="$a,$b" timeout 300 "${MPI_CMD[@]}" -x FI_GAMMA_IFACE -x FI_GAMMA_STATS=1 \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$a,$b" \
	-np 1 "$prog" "$tmp/flag" 20000 : \
	-np 1 -x FI_GAMMA_STATS=1 -x FI_GAMMA_UX_PEER_MAX=$cap "$prog" "$tmp/flag" 20000 2>&1)
rc=$?
[ $rc -ne 124 ] || fail "the job hung: messages were lost: $(grep -v '^gamma' <<<"$out" | tail -20)"
[ $rc -eq 0 ] && grep -q '^outrun: OK: 20000 messages' <<<"$out" ||
	fail "rc $rc: $(grep -v '^gamma' <<<"$out" | tail -20)"
# Rank 1's endpoint: the only one whose stats show refused frames.
line=$(grep -E '^gamma msg stats .*unexpected frames refused [1-9]' <<<"$out")
[ -n "$line" ] || fail "rank 1 never reached its cap of $cap B, nothing was tested: $(grep '^gamma msg' <<<"$out")"
peak=$(sed -n 's/.*unexpected frames refused [0-9]* (peak \([0-9]*\) B).*/\1/p' <<<"$line")
[ "$peak" -le $((2 * cap)) ] || fail "rank 1 held $peak B of unexpected messages, cap $cap B"
echo "ok: 20000 messages intact past a $cap-byte cap: $(grep -o 'unexpected frames refused [0-9]* (peak [0-9]* B)' <<<"$line")"
