#!/bin/bash
# Who chooses gamma-rawd's policy: the helper is setcap'd, so its caller
# controls argv and the environment.  With a setcap'd copy of the helper and
# a veth pair in a private namespace:
#  1. the /proc/self/cmdline trick (argv[0] = "interface *\nethertype
#     0x0800\n#", GAMMA_RAWD_CONF=/proc/self/cmdline) as nobody, through the
#     provider's protocol and through --check: refused, saying why, although
#     a valid configuration allowing the interface is in place;
#  2. as root (who may name a file): the same trick is refused (procfs), a
#     file in a directory nobody owns, in a world-writable directory, and a
#     FIFO are refused; a proper file is used (the control);
#  3. as nobody through the compiled-in path: a proper file grants sockets
#     (the control), the same file in a directory nobody owns, or owned by
#     nobody, is refused.
. "$(dirname "$0")/cluster-lib.sh" rc
build=${GAMMA_BUILD_DIR:-$top}
RAWD=$build/rawd/gamma-rawd
ASK=$BUILT/tools/gm-rawd-ask
for t in setcap setpriv; do
	command -v $t >/dev/null || skip "'$t' not installed (setcap: libcap2-bin, setpriv: util-linux)"
done
for f in "$RAWD" "$ASK"; do [ -x "$f" ] || fail "$f not built (make check builds it)"; done
. "$top/tests/integration/rawd-lib.sh"
NOBODY=65534

veth_ns e0 e1

chmod 755 "$WORK"
mkdir -p "$WORK/bin" "$WORK/etc" "$WORK/home" "$WORK/open"
cp "$RAWD" "$WORK/bin/gamma-rawd"
cp "$ASK" "$WORK/bin/gm-rawd-ask"
setcap cap_net_raw+ep "$WORK/bin/gamma-rawd" 2>"$WORK/setcap.err" ||
	skip "setcap failed here (file capabilities unsupported?): $(cat "$WORK/setcap.err")"
case ,$(findmnt -no OPTIONS -T "$WORK/bin" 2>/dev/null), in
*,nosuid,*) skip "$WORK is on a nosuid mount: file capabilities are ignored there (set TMPDIR)" ;;
esac
chown "$NOBODY" "$WORK/home"
chmod 777 "$WORK/open"
printf 'interface e0\nethertype 0x88B5\n' >"$WORK/etc/ok.conf"
for d in home open; do cp "$WORK/etc/ok.conf" "$WORK/$d/rawd.conf"; done
chmod 644 "$WORK"/*/*.conf

H=$WORK/bin/gamma-rawd
TRICK=$'interface *\nethertype 0x0800\n#'
nobody=(env -i PATH=/usr/bin:/bin setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups
	--inh-caps=-all env)
# expect RC PATTERN WHAT CMD...: CMD (in the namespace) exits RC, printing PATTERN.
expect()
{
	local rc=$1 pat=$2 what=$3 out got
	shift 3
	out=$("$@" 2>&1)
	got=$?
	[ $got -eq "$rc" ] || fail "$what: exit $got, expected $rc: $out"
	grep -qF -- "$pat" <<<"$out" || fail "$what: expected /$pat/ in: $out"
	ok "$what: $(grep -m1 -F -- "$pat" <<<"$out" | cut -c1-160)"
}
inns=(timeout 20 ip netns exec "$NS")

# 1. The trick as nobody, with a valid configuration in place.
msg='refusing GAMMA_RAWD_CONF: only root may choose the configuration'
expect 0 'granted a packet socket' "nobody, compiled-in configuration (control)" \
	rawd_conf_ns "$WORK/etc/ok.conf" "${inns[@]}" "${nobody[@]}" "$WORK/bin/gm-rawd-ask" "$H" \
	gamma-rawd e0 0x88B5
expect 1 "$msg" "nobody, /proc/self/cmdline trick, protocol" \
	rawd_conf_ns "$WORK/etc/ok.conf" "${inns[@]}" "${nobody[@]}" GAMMA_RAWD_CONF=/proc/self/cmdline \
	"$WORK/bin/gm-rawd-ask" "$H" "$TRICK" e0 0x0800
expect 1 "$msg" "nobody, /proc/self/cmdline trick, --check" \
	rawd_conf_ns "$WORK/etc/ok.conf" "${inns[@]}" "${nobody[@]}" GAMMA_RAWD_CONF=/proc/self/cmdline \
	bash -c 'exec -a "$1" "$2" --check e0 0x0800' sh "$TRICK" "$H"
expect 1 "$msg" "nobody, GAMMA_RAWD_CONF naming a proper root-owned file" \
	"${inns[@]}" "${nobody[@]}" GAMMA_RAWD_CONF="$WORK/etc/ok.conf" "$WORK/bin/gm-rawd-ask" "$H" \
	gamma-rawd e0 0x88B5

# 2. Root may name a file, but only a trustworthy one.
expect 0 'granted a packet socket' "root, GAMMA_RAWD_CONF=$WORK/etc/ok.conf (control)" \
	"${inns[@]}" env GAMMA_RAWD_CONF="$WORK/etc/ok.conf" "$WORK/bin/gm-rawd-ask" "$H" gamma-rawd e0 0x88B5
expect 1 'is on a proc file system' "root, /proc/self/cmdline trick" \
	"${inns[@]}" env GAMMA_RAWD_CONF=/proc/self/cmdline "$WORK/bin/gm-rawd-ask" "$H" "$TRICK" e0 0x0800
expect 1 "directory $WORK/home must belong to root" "root, file in a directory nobody owns" \
	"${inns[@]}" env GAMMA_RAWD_CONF="$WORK/home/rawd.conf" "$WORK/bin/gm-rawd-ask" "$H" gamma-rawd e0 0x88B5
expect 1 "directory $WORK/open must belong to root and be writable by root only" \
	"root, file in a world-writable directory" \
	"${inns[@]}" env GAMMA_RAWD_CONF="$WORK/open/rawd.conf" "$WORK/bin/gm-rawd-ask" "$H" gamma-rawd e0 0x88B5
mkfifo "$WORK/etc/fifo.conf"
expect 1 "refusing config $WORK/etc/fifo.conf: it must be a regular file" "root, a FIFO" \
	"${inns[@]}" env GAMMA_RAWD_CONF="$WORK/etc/fifo.conf" "$WORK/bin/gm-rawd-ask" "$H" gamma-rawd e0 0x88B5

# 3. The compiled-in path as nobody: the same rules.
dir=$(dirname "$RAWD_DEFAULT_CONF")
RAWD_DIR_OWNER=$NOBODY expect 1 "directory $dir must belong to root" \
	"nobody, compiled-in path in a directory nobody owns" \
	rawd_conf_ns "$WORK/etc/ok.conf" "${inns[@]}" "${nobody[@]}" "$WORK/bin/gm-rawd-ask" "$H" \
	gamma-rawd e0 0x88B5
RAWD_FILE_OWNER=$NOBODY expect 1 "refusing config $RAWD_DEFAULT_CONF: it must be a regular file owned by root" \
	"nobody, compiled-in path owned by nobody" \
	rawd_conf_ns "$WORK/etc/ok.conf" "${inns[@]}" "${nobody[@]}" "$WORK/bin/gm-rawd-ask" "$H" \
	gamma-rawd e0 0x88B5
echo "all gamma-rawd configuration checks passed"
