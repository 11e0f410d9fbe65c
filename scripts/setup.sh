#!/usr/bin/env bash
# spmdarray dependency bootstrap. Idempotent and safe to re-run.
#
#  1. Debian packages (installed when running as root, otherwise the exact apt-get line is printed).
#  2. Kokkos 3.4.1 + Kokkos Kernels from Debian's trilinos source package, built Serial+OpenMP
#     (Release, C++17) into a cache prefix outside the clone, keyed by version and options.
#     Skipped when the user already provides Kokkos (Kokkos_ROOT / KokkosKernels_ROOT /
#     CMAKE_PREFIX_PATH containing a KokkosConfig.cmake).
#
# Prints, as its last line, `SPMD_KOKKOS_PREFIX=<prefix>` (empty when the user's Kokkos is used).
# Environment:
#   SPMD_CACHE_DIR    cache root (default: ${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray)
#   SPMD_JOBS         parallel build jobs (default: nproc)
#   SPMD_SKIP_APT=1   do not touch Debian packages
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
jobs=${SPMD_JOBS:-$(nproc)}
log() { printf '[spmd setup] %s\n' "$*" >&2; }

# One set-up at a time per cache: two scripts started together (the demo and the tests, or two
# clones on one machine) would otherwise both find no finished Kokkos and remove each other's
# build folder. The second waits here and then finds the first one's install.
mkdir -p "$cache"
exec 9>"$cache/.setup.lock"
if ! flock -n 9; then
  log "another set-up is running on $cache; waiting for it"
  flock 9
fi

# ---------------------------------------------------------------------------------------------
# 1. Debian packages
# ---------------------------------------------------------------------------------------------
pkgs=(build-essential cmake pkg-config mpich libmpich-dev libhdf5-mpich-dev hdf5-tools
      libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev zlib1g-dev librandom123-dev libfftw3-dev
      python3-numpy python3-h5py python3-matplotlib python3-scipy python3-dev python3-venv dpkg-dev clang-format
      doxygen)
if [[ "${SPMD_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
      log "installing Debian packages: ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
      log "missing Debian packages; run as root:"
      echo "  apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
fi

# ---------------------------------------------------------------------------------------------
# 2. Kokkos + Kokkos Kernels
# ---------------------------------------------------------------------------------------------
have_user_kokkos() {
  [[ -n "${Kokkos_ROOT:-}" || -n "${Kokkos_DIR:-}" ]] && return 0
  local IFS=:
  for d in ${CMAKE_PREFIX_PATH:-}; do
    compgen -G "$d/lib*/cmake/Kokkos/KokkosConfig.cmake" >/dev/null && return 0
  done
  return 1
}
if have_user_kokkos; then
  log "using the Kokkos given by Kokkos_ROOT/CMAKE_PREFIX_PATH; no bootstrap"
  echo "SPMD_KOKKOS_PREFIX="
  exit 0
fi

kokkos_version=3.4.1
trilinos_version=13.2.0
kk_opts="-DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH=\$ORIGIN
 -DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF
 -DKokkosKernels_INST_ORDINAL_INT=ON -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
 -DKokkosKernels_INST_OFFSET_INT=ON -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
 -DKokkosKernels_INST_LAYOUTLEFT=ON -DKokkosKernels_INST_LAYOUTRIGHT=OFF
 -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_ENABLE_TPL_BLAS=OFF
 -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF"
# Shared libraries (as Spack builds them): libspmdarray.so links them, and a static Kokkos would
# be copied into it and into every program. RUNPATH $ORIGIN: libkokkoskernels.so finds
# libkokkoscontainers.so beside it (a program's own RUNPATH does not serve its libraries' needs).
# Kokkos Kernels' instantiations: double, int ordinals and offsets, LayoutLeft, and only the
# OpenMP execution space (the default and the default host space; Serial calls still compile,
# in the caller's translation unit).
k_opts="-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DCMAKE_BUILD_TYPE=Release
 -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_RPATH=\$ORIGIN
 -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF"
key=$( (echo "$kokkos_version $trilinos_version"; echo "$k_opts"; echo "$kk_opts"; g++ --version | head -1) |
       sha1sum | cut -c1-10)
prefix="$cache/kokkos-$kokkos_version-openmp-$key"
if [[ -f "$prefix/.complete" ]]; then
  log "Kokkos $kokkos_version cached at $prefix"
  echo "SPMD_KOKKOS_PREFIX=$prefix"
  exit 0
fi

src="$cache/src"
"$here/fetch-kokkos-source.sh" "$src" >&2
build="$cache/build-$key"
rm -rf "$build" "$prefix"
mkdir -p "$build"
log "building Kokkos $kokkos_version (Serial+OpenMP) into $prefix"
# shellcheck disable=SC2086
cmake -S "$src/kokkos" -B "$build/kokkos" -DCMAKE_INSTALL_PREFIX="$prefix" $k_opts >"$build/kokkos.log" 2>&1 ||
  { tail -50 "$build/kokkos.log" >&2; exit 1; }
cmake --build "$build/kokkos" -j "$jobs" >>"$build/kokkos.log" 2>&1 || { tail -50 "$build/kokkos.log" >&2; exit 1; }
cmake --install "$build/kokkos" >>"$build/kokkos.log" 2>&1
log "building Kokkos Kernels (double/int ETI; takes several minutes on 2 cores)"
# shellcheck disable=SC2086
cmake -S "$src/kokkos-kernels" -B "$build/kernels" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF $kk_opts \
  >"$build/kernels.log" 2>&1 || { tail -50 "$build/kernels.log" >&2; exit 1; }
cmake --build "$build/kernels" -j "$jobs" >>"$build/kernels.log" 2>&1 || { tail -50 "$build/kernels.log" >&2; exit 1; }
cmake --install "$build/kernels" >>"$build/kernels.log" 2>&1
touch "$prefix/.complete"
rm -rf "$build"
log "Kokkos installed at $prefix"
echo "SPMD_KOKKOS_PREFIX=$prefix"
