#!/bin/bash
# ompi_info lists btl gamma and every parameter the BTL promises, each with
# a help text.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/gamma-env.sh"
fail() { echo "FAIL: $*"; exit 1; }

out=$(timeout 60 ompi_info --param btl gamma --level 9 2>&1) || fail "ompi_info exited $?: $out"
grep -q 'MCA btl: gamma' <<<"$out" || fail "ompi_info does not list component btl gamma: $out"
for p in if_include if_exclude priority eager_limit max_send_size exclusivity latency bandwidth \
	verbose; do
	line=$(grep -A1 "parameter \"btl_gamma_$p\"" <<<"$out") ||
		fail "ompi_info does not list btl_gamma_$p"
	help=$(sed -n 2p <<<"$line" | sed 's/^ *//')
	[ ${#help} -ge 20 ] && ! grep -q '^MCA btl' <<<"$help" ||
		fail "btl_gamma_$p has no help text: $line"
	echo "ok: btl_gamma_$p: $help" | cut -c1-100
done
grep -A3 'parameter "btl_gamma_priority"' <<<"$out" | grep -q '"low".*"high"\|"high".*"low"' ||
	fail "btl_gamma_priority does not offer low and high"
grep -q 'parameter "btl_gamma_priority" (current value: "high"' <<<"$out" ||
	fail "btl_gamma_priority does not default to high"

# Values given through the environment are taken.
out=$(OMPI_MCA_btl_gamma_eager_limit=8192 timeout 60 ompi_info --param btl gamma --level 9 2>&1)
grep -q 'parameter "btl_gamma_eager_limit" (current value: "8192"' <<<"$out" ||
	fail "btl_gamma_eager_limit=8192 not taken"
out=$(OMPI_MCA_btl_gamma_priority=low timeout 60 ompi_info --param btl gamma --level 9 2>&1)
grep -q 'parameter "btl_gamma_priority" (current value: "low"' <<<"$out" ||
	fail "btl_gamma_priority=low not taken"
echo "ok: ompi_info lists btl gamma and all its parameters with help text"
