# Sourced by npb-runs/run for --npb-dir/--npb-tar: finds the official NPB 3.4
# MPI source and builds it, unmodified, once per MPI (a copy per MPI, so the
# user's tree is never written to). Uses run's variables: npb_dir, npb_tar,
# results, build, bench_list, class_list, prog_path, prog_from, build_failed,
# npb_src, npb_bin, say.
#
# The NPB 3.4 layout this relies on: NPB3.4-MPI/ holds config/
# (make.def.template, and make.def which we write), sys/ (setparams), one
# directory per benchmark and a top Makefile where `make <bench> CLASS=<c>`
# leaves bin/<bench>.<c>.x. bin/ must exist before make.

# shellcheck shell=bash disable=SC2154,SC2034 # run's variables

# is_npb_mpi DIR: DIR looks like NPB3.x-MPI.  The multi-zone NPB3.x-MZ-MPI
# has the same layout but other benchmarks (bt-mz, sp-mz, lu-mz): never it.
is_npb_mpi()
{
	[[ ${1##*/} != *-MZ* ]] && [ -f "$1/config/make.def.template" ] && [ -d "$1/sys" ] &&
		[ -f "$1/Makefile" ]
}

# npb_find_source: prints the NPB3.4-MPI directory of --npb-dir, or of the
# unpacked --npb-tar.  A checkout may hold NPB3.4-MPI beside NPB3.4-MZ/ and
# NPB3.4-OMP: only a directory named NPB3*-MPI (not -MZ-MPI) counts.
npb_find_source()
{
	local root=$npb_dir d
	if [ -n "$npb_tar" ]; then
		root=$build/npb-runs/results/npb-src
		rm -rf "$root" && mkdir -p "$root" || return 1
		say "unpacking $npb_tar"
		tar -xf "$npb_tar" -C "$root" || { echo "$ME: cannot unpack $npb_tar" >&2; return 1; }
	fi
	root=$(cd "$root" && pwd) || return 1
	if is_npb_mpi "$root"; then
		echo "$root"
		return 0
	fi
	while IFS= read -r d; do
		is_npb_mpi "$d" && { echo "$d"; return 0; }
	done < <(find "$root" -maxdepth 3 -type d -name 'NPB3*-MPI' ! -name '*-MZ*' | sort)
	return 1
}

# npb_find_bin: prints the directory of already built NPB programs
# (<bench>.<class>.x) that --npb-dir names: DIR itself, DIR/bin or
# DIR/NPB3*-MPI/bin; nothing when there is none.
npb_find_bin()
{
	local d
	for d in "$npb_dir" "$npb_dir/bin" "$npb_dir"/NPB3*-MPI/bin; do
		[[ $d == *-MZ* ]] && continue
		compgen -G "$d/[a-z][a-z].[A-Z].x" >/dev/null && { (cd "$d" && pwd); return 0; }
	done
	return 1
}

# npb_mpi_of PROGRAM: openmpi or mpich, from the MPI library it is linked
# with (a site's build may use either).
npb_mpi_of()
{
	local needed
	needed=$(readelf -d "$1" 2>/dev/null | awk '/NEEDED/ {print $NF}')
	case $needed in
	*libmpich*) echo mpich ;;
	*libmpi.so* | *libmpi_mpifh* | *libmpi_usempi*) echo openmpi ;;
	*) return 1 ;;
	esac
}

# npb_use_bin DIR: takes every <bench>.<class>.x of DIR asked for, per MPI;
# sets prog_from[KIND.bench.class] so the table says where it came from.
npb_use_bin()
{
	local dir=$1 b c p kind
	for b in "${bench_list[@]}"; do
		for c in "${class_list[@]}"; do
			p=$dir/$b.$c.x
			[ -x "$p" ] || continue
			if ! kind=$(npb_mpi_of "$p"); then
				say "ignoring $p: linked with neither Open MPI nor MPICH"
				continue
			fi
			prog_path[$kind.$b.$c]=$p
			prog_from[$kind.$b.$c]=site-bin
		done
	done
}

# npb_compilers KIND: sets fc and cc, the MPI compiler wrappers of KIND.
npb_compilers()
{
	local c
	fc='' cc=''
	case $1 in
	openmpi)
		for c in mpifort mpif90; do command -v $c >/dev/null && { fc=$c; break; }; done
		command -v mpicc >/dev/null && cc=mpicc
		;;
	mpich)
		for c in mpifort.mpich mpif90.mpich; do command -v $c >/dev/null && { fc=$c; break; }; done
		command -v mpicc.mpich >/dev/null && cc=mpicc.mpich
		;;
	esac
	[ -n "$fc" ] && [ -n "$cc" ]
}

# npb_build KIND: the programs of KIND that no site bin/ gave: copies the
# source to results/npb-build/KIND, writes config/make.def and builds them; a
# program that cannot be had is recorded in build_failed[KIND.bench.class]
# and its rows say why.
npb_build()
{
	local kind=$1 src dst b c fflags major log
	local -a todo=()
	for b in "${bench_list[@]}"; do
		for c in "${class_list[@]}"; do
			[ -n "${prog_path[$kind.$b.$c]:-}" ] || todo+=("$b.$c")
		done
	done
	[ ${#todo[@]} -gt 0 ] || return 0
	npb_fail_all()
	{
		local t
		for t in "${todo[@]}"; do build_failed[$kind.$t]=$1; done
	}
	if [ -z "$npb_src" ]; then
		npb_fail_all "not in ${npb_bin:-$npb_dir} for $kind, and no NPB source to build it"
		return 0
	fi
	src=$npb_src
	dst=$build/npb-runs/results/npb-build/$kind
	if ! npb_compilers "$kind"; then
		npb_fail_all "no $kind Fortran/C compiler wrappers"
		return 0
	fi
	say "copying the NPB source for $kind to $dst"
	rm -rf "$dst" && mkdir -p "$dst" && cp -a "$src/." "$dst/" || return 1
	rm -rf "${dst:?}/bin" && mkdir -p "$dst/bin" || return 1

	# gfortran 10 and later reject NPB's MPI calls with mixed buffer types
	# and its BOZ constants unless told to allow them.
	fflags="-O3"
	major=$($fc -dumpversion 2>/dev/null | cut -d. -f1)
	[[ $major =~ ^[0-9]+$ ]] && [ "$major" -ge 10 ] && fflags+=" -fallow-argument-mismatch -fallow-invalid-boz"

	# The template's own settings come first; ours, appended, win (make takes
	# the last assignment). The MPI wrappers bring their own include and
	# library flags, so the template's -lmpi examples are emptied: a bare
	# -lmpi would link Open MPI into an MPICH build.
	{
		cat "$src/config/make.def.template"
		cat <<EOF

# ---- written by npb-runs/run for $kind ----
MPIFC = $fc
MPIF77 = $fc
FLINK = \$(MPIFC)
FMPI_LIB =
FMPI_INC =
FFLAGS = $fflags
FLINKFLAGS = \$(FFLAGS)
MPICC = $cc
CLINK = \$(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O3
CLINKFLAGS = \$(CFLAGS)
CC = gcc -g
BINDIR = ../bin
EOF
	} >"$dst/config/make.def" || return 1

	local t
	for t in "${todo[@]}"; do
		b=${t%.*} c=${t#*.}
		log=$results/logs/npb-build.$kind.$b.$c.log
		say "building official NPB ${b^^} class $c with $kind ($fc, $cc)"
		if ! make -C "$dst" "$b" CLASS="$c" >"$log" 2>&1; then
			build_failed[$kind.$b.$c]="build failed (logs/${log##*/})"
		elif [ ! -x "$dst/bin/$b.$c.x" ]; then
			build_failed[$kind.$b.$c]="build made no bin/$b.$c.x (logs/${log##*/})"
		else
			prog_path[$kind.$b.$c]=$dst/bin/$b.$c.x
			prog_from[$kind.$b.$c]=built
		fi
	done
}
