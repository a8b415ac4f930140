# Source after `make` to use gamma from the build tree, uninstalled:
#   . tools/gamma-env.sh
#   fi_info -p gamma;  mpirun --mca btl self,vader,gamma ./app
# Sets FI_PROVIDER_PATH (libfabric finds libgamma-fi.so) and
# OMPI_MCA_mca_base_component_path (Open MPI finds mca_btl_gamma.so), and
# FI_GAMMA_RAWD (the build tree's gamma-rawd helper). btl gamma finds its messages
# (help-btl-gamma.txt) beside the component, in btl_gamma/component.

_gm_top=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
_gm_build=${GAMMA_BUILD_DIR:-$_gm_top}

if [ ! -e "$_gm_build/provider/.libs/libgamma-fi.so" ]; then
	echo "gamma-env.sh: $_gm_build/provider/.libs/libgamma-fi.so not found; run make first" >&2
fi

# libfabric's own provider directory holds other external providers; keep it.
_gm_fabdir=$(pkg-config --variable=libdir libfabric 2>/dev/null)/libfabric
FI_PROVIDER_PATH=$_gm_build/provider/.libs
[ -d "$_gm_fabdir" ] && FI_PROVIDER_PATH=$FI_PROVIDER_PATH:$_gm_fabdir
export FI_PROVIDER_PATH

# Open MPI stops scanning at the first missing directory, and leaving out its
# own directory drops every stock component: list only existing ones, system
# directory first.
_gm_path=
for _gm_d in "$(ompi_info --parsable --path pkglibdir 2>/dev/null | cut -d: -f3-)" \
	"$HOME/.openmpi/components" "$_gm_build/btl_gamma/component"; do
	[ -n "$_gm_d" ] && [ -d "$_gm_d" ] && _gm_path=${_gm_path:+$_gm_path:}$_gm_d
done
export OMPI_MCA_mca_base_component_path=$_gm_path
# Without CAP_NET_RAW the provider asks the gamma-rawd helper for its sockets;
# the build tree's copy works once root has run setcap cap_net_raw+ep on it.
[ -x "$_gm_build/rawd/gamma-rawd" ] &&
	export FI_GAMMA_RAWD=$_gm_build/rawd/gamma-rawd
unset _gm_top _gm_build _gm_fabdir _gm_path _gm_d
