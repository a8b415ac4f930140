#!/bin/bash
# The Debian packages (debian/): build them from a copy of the tree with
# dpkg-buildpackage, check which files each holds, then install, use,
# remove and purge them in a throw-away root:
#  - every file where Debian's libfabric and Open MPI look by default (asked
#    of fi_info and ompi_info, not of configure), the conffile, no .la;
#  - installed, with no environment variable naming a path: fi_info -p gamma
#    lists the provider, ompi_info lists btl gamma, the BTL finds its help
#    file, mpirun --mca btl self,vader,gamma runs, and with btl self,gamma
#    the data crosses gamma: as root, and as nobody through the installed
#    gamma-rawd (postinst's setcap, /etc/gamma/rawd.conf);
#  - removed: the plugins are gone, the conffile stays; purged: nothing of
#    the packages is left, and no file of the machine was changed or removed.
# The throw-away root is this machine's own root file system under an
# overlay whose upper layer is a tmpfs, in a private mount and network
# namespace: dpkg really runs (maintainer scripts, triggers, conffiles), it
# needs neither network nor a second system (debootstrap), and the
# machine's dpkg database and files are never touched, whatever happens to
# the test (the namespace and its tmpfs vanish with the last process).
set -u
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
pkgs=(libfabric-provider-gamma openmpi-btl-gamma gamma-rawd gamma-tools)
top=$(cd "$(dirname "$0")/../.." && pwd)
path=/usr/sbin:/usr/bin:/sbin:/bin

# ---- part 2: inside the private namespaces (see the end of part 1) --------
if [ "${1:-}" = --throwaway-root ]; then
	tmp=$2 a=$3 b=$4
	. "$tmp/expect"
	ns=$tmp/ns
	mount -t tmpfs -o mode=755 gamma-deb "$ns" || fail "cannot mount a tmpfs in the namespace"
	mkdir "$ns/lower" "$ns/upper" "$ns/work" "$ns/root"
	# A non-recursive bind: the root file system alone, without its submounts.
	mount --bind / "$ns/lower" || fail "cannot bind-mount / in the namespace"
	mount -t overlay gamma-deb -o "lowerdir=$ns/lower,upperdir=$ns/upper,workdir=$ns/work" "$ns/root" ||
		skip "cannot mount an overlay on / here (overlayfs)"
	R=$ns/root U=$ns/upper
	mount -t proc proc "$R/proc" && mount -t sysfs sysfs "$R/sys" &&
		mount --rbind /dev "$R/dev" && mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm" &&
		mount -t tmpfs -o mode=1777 tmpfs "$R/tmp" && mount -t tmpfs -o mode=755 tmpfs "$R/run" ||
		fail "cannot mount /proc, /sys, /dev, /tmp, /run in the throw-away root"
	ip link set lo up && ip link add "$a" type veth peer name "$b" &&
		ip link set "$a" up && ip link set "$b" up || fail "cannot create veth pair $a/$b"
	mkdir "$R/tmp/debs" "$R/tmp/home" && cp "$tmp"/build/*.deb "$tmp/gm-mpi-hello" "$R/tmp/debs/" &&
		chmod 755 "$R/tmp/debs" && chmod 1777 "$R/tmp/home" || fail "cannot copy the packages"
	# in_root CMD...: run CMD in the throw-away root with no inherited environment.
	in_root() { env -i PATH="$path" HOME=/tmp/home LC_ALL=C.UTF-8 chroot "$R" "$@"; }
	as_nobody() { env -i PATH="$path" HOME=/tmp/home LC_ALL=C.UTF-8 chroot --userspec=65534:65534 "$R" "$@"; }
	# The launch recipe (tools/lib/mpi.sh) with no plugin path to pass on:
	# the installed packages must be found without one (and every command
	# here runs in the throw-away root with a clean environment anyway).
	unset FI_PROVIDER_PATH OMPI_MCA_mca_base_component_path
	# shellcheck source=../../tools/lib/mpi.sh
	. "$top/tools/lib/mpi.sh"
	mpi_ompi
	# mpirun_np2 RUNNER ARGS...: two ranks, one on each veth end, started by
	# RUNNER (in_root or as_nobody, with arguments: split on spaces).
	mpirun_np2() {
		local run=$1
		shift
		$run timeout 120 "${MPI_CMD[@]}" -np 2 --mca pml ob1 --mca btl_gamma_if_include "$a,$b" "$@"
	}

	# The root is this machine without gamma: drop an earlier installation
	# (packages, or a `make install`) inside the overlay only.
	mapfile -t installed < <(in_root dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null |
		grep -v ' not-installed$' | cut -d' ' -f1)
	if [ ${#installed[@]} -gt 0 ]; then
		echo "note: purging this machine's gamma packages in the throw-away root: ${installed[*]}"
		in_root dpkg --purge "${installed[@]}" >/dev/null ||
			fail "cannot purge ${installed[*]} in the throw-away root"
	fi
	for f in $files /etc/gamma; do
		[ -e "$R$f" ] || continue
		echo "note: removing $f (an earlier make install?) in the throw-away root"
		rm -rf "${R:?}$f"
	done
	out=$(in_root timeout 60 fi_info -p gamma 2>&1) && fail "fi_info -p gamma finds gamma before the packages are installed: $out"
	in_root ompi_info 2>&1 | grep -q 'MCA btl: gamma' && fail "ompi_info lists btl gamma before the packages are installed"
	find "$U" -mindepth 1 -printf '%y %P\n' | sort >"$tmp/upper.before"

	out=$(in_root sh -c 'dpkg -i /tmp/debs/*.deb' 2>&1) || fail "dpkg -i failed: $out"
	for f in $files; do
		[ -e "$R$f" ] || fail "$f missing after dpkg -i"
	done
	caps=$(getcap "$R/usr/libexec/gamma/gamma-rawd")
	grep -q 'cap_net_raw[=+]ep' <<<"$caps" || fail "postinst did not give gamma-rawd CAP_NET_RAW: '$caps' ($out)"
	echo "ok: dpkg -i installed all four packages; gamma-rawd has CAP_NET_RAW"

	out=$(in_root timeout 60 fi_info -p gamma 2>&1) || fail "fi_info -p gamma failed: $out"
	grep -q 'provider: gamma' <<<"$out" && grep -q "domain: $a\$" <<<"$out" &&
		grep -q "domain: $b\$" <<<"$out" || fail "fi_info -p gamma does not list gamma on $a, $b: $out"
	out=$(in_root timeout 60 ompi_info --param btl gamma --level 9 2>&1) || fail "ompi_info failed: $out"
	grep -q 'MCA btl: gamma' <<<"$out" && grep -q 'btl_gamma_if_include"' <<<"$out" ||
		fail "ompi_info does not list btl gamma and its parameters: $out"
	echo "ok: with no environment, fi_info -p gamma lists $a and $b; ompi_info lists btl gamma"

	out=$(mpirun_np2 in_root --allow-run-as-root --mca btl self,vader,gamma \
		--mca btl_base_verbose 100 /tmp/debs/gm-mpi-hello 2>&1)
	rc=$?
	[ $rc -eq 0 ] && grep -q '^gm-mpi-hello: ok ' <<<"$out" || fail "mpirun --mca btl self,vader,gamma (rc $rc): $out"
	[ "$(grep -c 'select: init of component gamma returned success' <<<"$out")" -eq 2 ] ||
		fail "btl gamma did not come up in both ranks: $out"
	out=$(mpirun_np2 in_root --allow-run-as-root --mca btl self,gamma --mca btl_base_verbose 100 \
		/tmp/debs/gm-mpi-hello 2>&1)
	rc=$?
	[ $rc -eq 0 ] && grep -q '^gm-mpi-hello: ok ' <<<"$out" || fail "mpirun --mca btl self,gamma (rc $rc): $out"
	[ "$(grep -c 'Using gamma btl for send to' <<<"$out")" -eq 2 ] || fail "gamma did not carry both directions: $out"
	echo "ok: mpirun with btl self,vader,gamma, and over gamma alone, verified its data (root)"

	# The help file: a user error is explained from it, not "Sorry! ...".
	out=$(in_root timeout 120 "${MPI_CMD[@]}" -np 1 --allow-run-as-root --mca btl self,vader,gamma \
		--mca btl_gamma_if_include gdx-missing /tmp/debs/gm-mpi-hello 2>&1)
	grep -q 'btl gamma: interface "gdx-missing" (btl_gamma_if_include) does not exist' <<<"$out" &&
		! grep -q 'Sorry!' <<<"$out" || fail "btl gamma's help file not found where Open MPI looks: $out"
	echo "ok: btl gamma explains a missing interface from its installed help file"

	# gamma-rawd as installed: nobody, no capabilities, only rawd.conf's say.
	printf 'interface %s\ninterface %s\n' "$a" "$b" >>"$R/etc/gamma/rawd.conf"
	out=$(mpirun_np2 "as_nobody env FI_LOG_LEVEL=info" -x FI_LOG_LEVEL --mca btl self,gamma \
		--mca btl_base_verbose 100 /tmp/debs/gm-mpi-hello 2>&1)
	rc=$?
	[ $rc -eq 0 ] && grep -q '^gm-mpi-hello: ok ' <<<"$out" &&
		[ "$(grep -c 'Using gamma btl for send to' <<<"$out")" -eq 2 ] ||
		fail "as nobody through gamma-rawd (rc $rc): $out"
	[ "$(grep -c 'packet sockets from gamma-rawd' <<<"$out")" -eq 2 ] ||
		fail "as nobody, both ranks should get their sockets from gamma-rawd: $out"
	echo "ok: as nobody, over gamma alone, sockets from the installed gamma-rawd and /etc/gamma/rawd.conf"

	out=$(in_root dpkg -r "${pkgs[@]}" 2>&1) || fail "dpkg -r failed: $out"
	for f in $files; do
		[ "$f" = /etc/gamma/rawd.conf ] && continue
		[ -e "$R$f" ] && fail "$f left after dpkg -r"
	done
	[ -f "$R/etc/gamma/rawd.conf" ] || fail "dpkg -r removed the conffile /etc/gamma/rawd.conf"
	out=$(in_root timeout 60 fi_info -p gamma 2>&1) && fail "fi_info -p gamma still finds gamma after dpkg -r: $out"
	in_root ompi_info 2>&1 | grep -q 'MCA btl: gamma' && fail "ompi_info lists btl gamma after dpkg -r"
	out=$(in_root dpkg --purge "${pkgs[@]}" 2>&1) || fail "dpkg --purge failed: $out"
	left=$(in_root dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null | grep -v ' not-installed$')
	[ -z "$left" ] || fail "dpkg still knows after purge: $left"
	[ -e "$R/etc/gamma" ] && fail "/etc/gamma left after purge: $(ls -la "$R/etc/gamma")"

	# What the upper layer gained is everything the packages changed; after
	# the purge only dpkg's own records and caches may remain.
	find "$U" -mindepth 1 -printf '%y %P\n' | sort >"$tmp/upper.after"
	left=$(comm -13 "$tmp/upper.before" "$tmp/upper.after" | while read -r type p; do
		case $p in
		var/lib/dpkg/* | var/log/dpkg.log | var/cache/man/* | var/cache/ldconfig/* | etc/ld.so.cache) continue ;;
		esac
		# Directories merely copied up on the way to a file are not changes.
		[ "$type" = d ] && [ -d "$ns/lower/$p" ] && continue
		echo "$type /$p"
	done)
	[ -z "$left" ] || fail "after purge, left or changed on the machine: $left"
	echo "ok: dpkg -r removed the plugins and kept the conffile; purge left nothing, changed nothing else"
	exit 0
fi

# ---- part 1: build and inspect the packages --------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (a private mount namespace and dpkg in a throw-away root)"
command -v dpkg-buildpackage >/dev/null || skip "dpkg-buildpackage not installed (apt-get install dpkg-dev)"
command -v dh >/dev/null || skip "debhelper not installed (apt-get install debhelper)"
for t in unshare chroot getcap fi_info ompi_info; do
	command -v $t >/dev/null || skip "'$t' not installed"
done
unshare --mount --net true 2>/dev/null || skip "cannot create mount and network namespaces here"
[ -d "$top/debian" ] || fail "$top/debian missing"

tmp=$(mktemp -d /tmp/debian-packages.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/build" "$tmp/build/gamma" "$tmp/ns"

# A copy of the sources only: the tree may hold an in-tree build.
if git -C "$top" rev-parse --show-toplevel >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -C "$tmp/build/gamma" -xf - || fail "cannot copy the tree"
else
	cp -a "$top/." "$tmp/build/gamma/" || fail "cannot copy the tree"
	[ ! -f "$tmp/build/gamma/Makefile" ] || make -s -C "$tmp/build/gamma" distclean >/dev/null ||
		fail "make distclean in the copy failed"
fi

start=$(date +%s)
(cd "$tmp/build/gamma" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" \
	timeout 900 dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1 ||
	fail "dpkg-buildpackage failed: $(tail -40 "$tmp/build.log")"
echo "ok: dpkg-buildpackage -b built ${pkgs[*]} in $(($(date +%s) - start)) s"

# Where this machine's libfabric and Open MPI look, asked of them.
fabdir=$(fi_info -e 2>/dev/null | grep -A1 'FI_PROVIDER_PATH:' | sed -n 's/.*(default: \([^)]*\)).*/\1/p')
mcadir=$(ompi_info --parsable --path pkglibdir | cut -d: -f3-)
helpdir=$(ompi_info --parsable --path pkgdatadir | cut -d: -f3-)
[ -n "$fabdir" ] && [ -n "$mcadir" ] && [ -n "$helpdir" ] ||
	fail "cannot tell libfabric's provider directory ('$fabdir') or Open MPI's ('$mcadir', '$helpdir')"

declare -A want=(
	[libfabric-provider-gamma]="$fabdir/libgamma-fi.so /usr/share/man/man7/fi_gamma.7.gz"
	[openmpi-btl-gamma]="$mcadir/mca_btl_gamma.so $helpdir/help-btl-gamma.txt"
	[gamma-rawd]="/usr/libexec/gamma/gamma-rawd /etc/gamma/rawd.conf"
	[gamma-tools]="/usr/bin/gamma-pingpong /usr/bin/gamma-stream-node /usr/bin/gamma-floor"
)
files=
for p in "${pkgs[@]}"; do
	deb=$(ls "$tmp/build/${p}_"*.deb 2>/dev/null) || fail "no package $p built: $(ls "$tmp/build")"
	list=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
	for f in ${want[$p]}; do
		grep -qx "$f" <<<"$list" || fail "$p lacks $f; it holds: $list"
		files="$files $f"
	done
	grep -q '\.la$' <<<"$list" && fail "$p ships libtool archives: $list"
done
[ "$(ls "$tmp"/build/*.deb | wc -l)" -eq ${#pkgs[@]} ] || fail "unexpected packages: $(ls "$tmp/build")"
conf=$(dpkg-deb -I "$tmp"/build/gamma-rawd_*.deb conffiles)
[ "$conf" = /etc/gamma/rawd.conf ] || fail "gamma-rawd's conffiles: '$conf'"
dpkg-deb --fsys-tarfile "$tmp"/build/libfabric-provider-gamma_*.deb | tar -xOf - ".$fabdir/libgamma-fi.so" |
	grep -aq '/usr/libexec/gamma/gamma-rawd' || fail "the provider does not run the packaged /usr/libexec/gamma/gamma-rawd"
echo "ok: plugins in $fabdir, $mcadir (help in $helpdir); rawd.conf a conffile; no .la"
echo "files='$files'" >"$tmp/expect"

mpicc=${MPICC:-mpicc.openmpi}
command -v "$mpicc" >/dev/null || mpicc=mpicc
"$mpicc" -O2 -o "$tmp/gm-mpi-hello" "$top/tests/tools/gm-mpi-hello.c" || fail "cannot build gm-mpi-hello"

a=gdpa$$ b=gdpb$$
timeout 600 unshare --mount --net --propagation private "$0" --throwaway-root "$tmp" "${a:0:15}" "${b:0:15}"
