#!/bin/bash
# A message btl gamma loses ends the job with a message that says why; the
# job never waits for it.  ob1 does not send a fragment twice, so a
# receive that fails (here: rank 0 sends fragments larger than rank 1's
# btl_gamma_max_send_size, so rank 1's receive is truncated) would leave a
# request waiting for ever.  The job must end by itself, non-zero, with
# the "message lost" help text on rank 1.  Two ranks on this host, each on
# one end of a fresh veth pair, as in btl-gamma-smoke.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=vethpair-lib.sh
. "$(dirname "$0")/vethpair-lib.sh"
vethpair_up gl
a=$VP_A b=$VP_B tmp=$VP_TMP

mpi_ompi
# The timeout only guards the test run; the job is expected to end on its own.
out=$(FI_GAMMA_IFACE="$a,$b" timeout 300 "${MPI_CMD[@]}" -x FI_GAMMA_IFACE \
	--mca pml ob1 --mca btl self,gamma --mca btl_gamma_if_include "$a,$b" \
	-np 1 -x OMPI_MCA_btl_gamma_max_send_size=200000 "$tmp/btl-smoke" : \
	-np 1 "$tmp/btl-smoke" 2>&1)
rc=$?
[ $rc -ne 124 ] || fail "the job hung after losing a message: $(tail -30 <<<"$out")"
[ $rc -ne 0 ] || fail "the job passed although rank 1 could not take rank 0's fragments: $out"
grep -q '^btl-smoke: OK$' <<<"$out" && fail "the job verified its data: nothing was lost: $out"
grep -q "a message was lost: its receive failed: gamma: message larger than the receive buffer; truncated" <<<"$out" ||
	fail "no 'message lost' error naming the truncation (rc $rc): $(tail -30 <<<"$out")"
grep -q "btl_gamma_max_send_size" <<<"$out" || fail "the error does not say how to fix it: $out"
echo "ok: a truncated receive ended the job (rc $rc) with: $(grep -m1 'a message was lost' <<<"$out")"
