# Sourced by the scripts: set up dependencies and configure + build spmdarray.
# After `spmd_build <build-dir> [extra cmake args...]`, the build is ready.
set -euo pipefail
SPMD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

spmd_log() { printf '[spmd] %s\n' "$*" >&2; }

# Runs scripts/setup.sh (Debian packages, then the Kokkos bootstrap) once per script and sets
# SPMD_KOKKOS_PREFIX (empty when the user's Kokkos is used). Call it before anything that looks
# at what is installed (spmd_hdf5_flag): on a new machine the packages arrive here.
spmd_setup() {
  [[ -n "${SPMD_SETUP_DONE:-}" ]] && return 0
  local line
  line=$("$SPMD_ROOT/scripts/setup.sh" | tail -1)
  SPMD_KOKKOS_PREFIX=${line#SPMD_KOKKOS_PREFIX=}
  SPMD_SETUP_DONE=1
}

spmd_build() {
  local build=$1
  shift
  spmd_setup
  local prefix=$SPMD_KOKKOS_PREFIX
  local args=(-DCMAKE_BUILD_TYPE=Release) d
  if [[ -n "$prefix" ]]; then
    args+=("-DCMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}")
    # Name the packages' folders too: a build folder configured before keeps the Kokkos_DIR it
    # cached, and would go on using an older bootstrap prefix than setup.sh now provides.
    for d in "$prefix"/lib*/cmake/Kokkos "$prefix"/lib*/cmake/KokkosKernels; do
      if [[ -d "$d" ]]; then args+=("-D$(basename "$d")_DIR=$d"); fi
    done
  fi
  # Build and run with MPICH by its own names: installing another MPI (e.g. with petsc4py) can
  # switch the generic mpicxx/mpiexec alternatives. SPMD_MPICXX / SPMD_MPIEXEC override.
  local mpicxx=${SPMD_MPICXX:-$(command -v mpicxx.mpich || true)}
  local mpiexec=${SPMD_MPIEXEC:-$(command -v mpiexec.mpich || true)}
  [[ -n "$mpicxx" ]] && args+=("-DMPI_CXX_COMPILER=$mpicxx")
  [[ -n "$mpiexec" ]] && args+=("-DMPIEXEC_EXECUTABLE=$mpiexec")
  spmd_log "configuring $build"
  cmake -S "$SPMD_ROOT" -B "$build" "${args[@]}" "$@" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; return 1; }
  spmd_log "building (log: $build.build.log)"
  cmake --build "$build" -j "${SPMD_JOBS:-$(nproc)}" >"$build.build.log" 2>&1 ||
    { tail -60 "$build.build.log" >&2; return 1; }
}

# The cache prefix of the patched CUDA (Hopper) Kokkos install: keyed by the patch set and the
# build script, so that a change to either builds a new one. cuda-build.sh builds it there and
# gpu/bundle.sh packs it from there.
spmd_cuda_kokkos_prefix() {
  local cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
  local key
  key=$(cat "$SPMD_ROOT/scripts/gpu/patch_kokkos.py" "$SPMD_ROOT/scripts/gpu/build-kokkos-cuda.sh" |
        sha1sum | cut -c1-10)
  echo "$cache/kokkos-3.4.1-cuda-hopper-$key"
}

# Prints -DSPMD_ENABLE_HDF5=ON when a parallel HDF5 is installed (Debian's libhdf5-mpich-dev), so
# the checkpoint module is built and tested wherever it can be; nothing otherwise. Decide only
# after spmd_setup (a new machine gets the package there), else the first build has no HDF5.
spmd_hdf5_flag() {
  if dpkg-query -W -f='${Status}' libhdf5-mpich-dev 2>/dev/null | grep -q "install ok installed"; then
    echo "-DSPMD_ENABLE_HDF5=ON"
  fi
}
