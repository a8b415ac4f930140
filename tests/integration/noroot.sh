#!/bin/bash
# MPI over btl gamma as an unprivileged user (nobody), through gamma-rawd.
# On a flat 3-node virtual cluster (one namespace, interfaces n0 n1 n2) with
# a setcap'd copy of the helper whose rawd.conf allows n0 and n1 only:
#  1. gm-rawd-probe (as nobody): what the holder of the sockets can and
#     cannot do, with real frames (rawd/README.md);
#  2. gm-mpi-hello, 2 ranks, btl self,gamma only (no other path between
#     the ranks), 4 MB each way checked byte by byte, the frames seen on
#     the bridge ports, both ranks reporting sockets from gamma-rawd;
#  3. interface n2 (not in rawd.conf): the helper refuses with a clear
#     message, directly and through the provider; the job falls back to
#     vader and still verifies its data; a 'group' nobody is not in, and a
#     configuration nobody owns, are refused too;
#  4. without a working helper (one without the capability, and a missing
#     one): the provider says what to fix, btl gamma reports CAP_NET_RAW,
#     and the job falls back and verifies its data.
. "$(dirname "$0")/cluster-lib.sh" nr
build=${GAMMA_BUILD_DIR:-$top}
HELLO=$BUILT/tools/gm-mpi-hello
PROBE=$BUILT/tools/gm-rawd-probe
RAWD=$build/rawd/gamma-rawd
for t in setcap setpriv mpirun ompi_info; do
	command -v $t >/dev/null || skip "'$t' not installed (setcap: libcap2-bin, setpriv: util-linux)"
done
for f in "$HELLO" "$PROBE" "$RAWD" "$build/provider/.libs/libgamma-fi.so" \
	"$build/btl_gamma/.libs/mca_btl_gamma.so"; do
	[ -e "$f" ] || fail "$f not built (make check builds it)"
done
NOBODY=65534
. "$top/tests/integration/rawd-lib.sh"

up "$NAME" --nodes 3
n0=gc-$NAME-n0 n1=gc-$NAME-n1 n2=gc-$NAME-n2 p0=gc-$NAME-p0

# Everything nobody runs or loads is copied to a directory nobody can read
# (the build tree might not be), and nobody gets a home and TMPDIR.
chmod 755 "$WORK"
mkdir -p "$WORK/bin" "$WORK/prov" "$WORK/btl" "$WORK/home"
cp "$HELLO" "$PROBE" "$WORK/bin/"
cp "$RAWD" "$WORK/bin/gamma-rawd"
cp "$RAWD" "$WORK/bin/gamma-rawd-nocap"
cp "$build/provider/.libs/libgamma-fi.so" "$WORK/prov/"
cp -L "$build/btl_gamma/.libs/mca_btl_gamma.so" "$WORK/btl/"
# btl gamma looks for its help file beside the component, as in the build tree.
cp "$top/btl_gamma/help-btl-gamma.txt" "$WORK/btl/"
chown "$NOBODY:$NOBODY" "$WORK/home" && chmod 700 "$WORK/home"
setcap cap_net_raw+ep "$WORK/bin/gamma-rawd" 2>"$WORK/setcap.err" ||
	skip "setcap failed here (file capabilities unsupported?): $(cat "$WORK/setcap.err")"
# File capabilities do not work on nosuid mounts.
case ,$(findmnt -no OPTIONS -T "$WORK/bin" 2>/dev/null), in
*,nosuid,*) skip "$WORK is on a nosuid mount: file capabilities are ignored there (set TMPDIR)" ;;
esac
printf 'interface %s\ninterface %s\nethertype 0x88B5\n' "$n0" "$n1" >"$WORK/rawd.conf"
chmod 644 "$WORK/rawd.conf"

sysmca=$(ompi_info --parsable --path pkglibdir | cut -d: -f3-)
# asnobody VAR=VALUE... CMD...: run CMD as nobody, no groups, no capabilities,
# in a clean environment (plus the given variables), with $RAWD_CONF
# (default $WORK/rawd.conf) as the helper's configuration (rawd-lib.sh).
asnobody()
{
	rawd_conf_ns "${RAWD_CONF:-$WORK/rawd.conf}" \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$WORK/home" TMPDIR="$WORK/home" \
		FI_PROVIDER_PATH="$WORK/prov" OMPI_MCA_mca_base_component_path="$sysmca:$WORK/btl" \
		setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups --inh-caps=-all \
		env "$@"
}
# job RAWD IFACES BTLS: gm-mpi-hello, 2 ranks, as nobody; output in $out.
# The recipe's plugin paths are asnobody's copies (the ranks run here).
mpi_ompi
job()
{
	out=$(cd "$WORK/home" && asnobody FI_GAMMA_RAWD="$1" FI_LOG_LEVEL=info \
		timeout 120 "${MPI_CMD[@]}" -np 2 -x FI_GAMMA_RAWD -x FI_LOG_LEVEL \
		--mca pml ob1 --mca btl "$3" --mca btl_gamma_if_include "$2" \
		"$WORK/bin/gm-mpi-hello" 4000000 2>&1)
}
good='gm-mpi-hello: ok 4000000 bytes each way with 1 peers'

# 1. The descriptors, probed (n0 allowed; p0 is its veth peer, not allowed).
out=$(asnobody FI_GAMMA_RAWD="$WORK/bin/gamma-rawd" timeout 60 "$WORK/bin/gm-rawd-probe" \
	"$n0" "$p0" 2>&1) || fail "gm-rawd-probe: $out"
echo "$out"

# 2. The MPI job over gamma, as nobody.
tx0=$(cat "/sys/class/net/gc-$NAME-p0/statistics/tx_bytes")
tx1=$(cat "/sys/class/net/gc-$NAME-p1/statistics/tx_bytes")
job "$WORK/bin/gamma-rawd" "$n0,$n1" self,gamma || fail "job as nobody failed: $out"
grep -q "$good" <<<"$out" || fail "job as nobody: data not verified: $out"
[ "$(grep -c 'packet sockets from gamma-rawd' <<<"$out")" -eq 2 ] ||
	fail "job as nobody: expected both ranks to get their sockets from gamma-rawd: $out"
for i in 0 1; do
	was=$tx0
	[ $i = 1 ] && was=$tx1
	now=$(cat "/sys/class/net/gc-$NAME-p$i/statistics/tx_bytes")
	[ $((now - was)) -ge 4000000 ] ||
		fail "bridge port p$i sent its node only $((now - was)) B, expected >= 4000000"
done
ok "nobody ran MPI over btl gamma on $n0,$n1 via gamma-rawd: 4 MB each way verified, on the wire"

# 3. An interface rawd.conf does not list.
msg="interface $n2 is not allowed by $RAWD_DEFAULT_CONF"
r=$(asnobody "$WORK/bin/gamma-rawd" --check "$n2" 2>&1) && fail "--check $n2 succeeded: $r"
grep -qF "$msg" <<<"$r" || fail "--check $n2: unclear message: $r"
job "$WORK/bin/gamma-rawd" "$n2" self,vader,gamma || fail "job on $n2 failed: $out"
grep -q "$good" <<<"$out" || fail "job on $n2: data not verified: $out"
[ "$(grep -cF "$msg" <<<"$out")" -eq 2 ] ||
	fail "job on $n2: expected the helper's refusal from both ranks: $out"
[ "$(grep -c 'btl gamma: .*CAP_NET_RAW' <<<"$out")" -eq 2 ] ||
	fail "job on $n2: expected btl gamma to report CAP_NET_RAW per rank: $out"
ok "refused: $(grep -m1 -oF "$msg" <<<"$out") (job fell back, data verified)"

# A group restriction nobody is not in, and a configuration a user could
# have written: both refused, saying why.
printf 'interface %s\ngroup root\n' "$n0" >"$WORK/group.conf"
r=$(RAWD_CONF=$WORK/group.conf asnobody "$WORK/bin/gamma-rawd" --check "$n0" 2>&1) &&
	fail "group root: nobody was allowed: $r"
grep -q "user $NOBODY is not in the group that $RAWD_DEFAULT_CONF allows" <<<"$r" ||
	fail "group root: unclear message: $r"
r=$(RAWD_FILE_OWNER=$NOBODY asnobody "$WORK/bin/gamma-rawd" --check "$n0" 2>&1) &&
	fail "a configuration owned by nobody was trusted: $r"
grep -q "refusing config $RAWD_DEFAULT_CONF: it must be a regular file owned by root" <<<"$r" ||
	fail "untrusted config: unclear message: $r"
ok "refused: a user outside 'group', and a configuration not owned by root"

# 4. No working helper: one without the capability, then none at all.
for h in nocap missing; do
	case $h in
	nocap) path=$WORK/bin/gamma-rawd-nocap want='gamma-rawd: no CAP_NET_RAW: install it with `setcap' ;;
	missing) path=$WORK/bin/nonexistent want="helper $WORK/bin/nonexistent: No such file" ;;
	esac
	job "$path" "$n0,$n1" self,vader,gamma || fail "job without helper ($h) failed: $out"
	grep -q "$good" <<<"$out" || fail "job without helper ($h): data not verified: $out"
	[ "$(grep -c 'lacks CAP_NET_RAW, and the gamma-rawd helper failed' <<<"$out")" -eq 2 ] &&
		[ "$(grep -cF "$want" <<<"$out")" -eq 2 ] ||
		fail "job without helper ($h): expected the provider's warning with /$want/ per rank: $out"
	[ "$(grep -c 'btl gamma: .*CAP_NET_RAW' <<<"$out")" -eq 2 ] ||
		fail "job without helper ($h): expected btl gamma to report CAP_NET_RAW per rank: $out"
	ok "no helper ($h): $(grep -m1 -o 'lacks CAP_NET_RAW.*' <<<"$out" | cut -c1-150)"
done
echo "all gamma-rawd checks passed"
