# Sourced by the scripts: set up dependencies and configure + build spmdarray.
# After `spmd_build <build-dir> [extra cmake args...]`, the build is ready.
set -euo pipefail
SPMD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

spmd_log() { printf '[spmd] %s\n' "$*" >&2; }

# Sets CPU to the CPU seconds (user + system) of this shell's finished child processes, from
# bash's `times`: with the wall time, what a phase costs on an idle machine (CPU / cores). Call it
# in the script's own shell, never in a $(...) subshell.
spmd_cpu_now() {
  local t
  t=$(mktemp)
  times >"$t"
  CPU=$(awk 'NR == 2 { n = split($1 " " $2, t, " "); s = 0
    for (i = 1; i <= n; i++) { split(t[i], p, "m"); s += p[1] * 60 + p[2] } printf "%d", s }' "$t")
  rm -f "$t"
}

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
  # SPMD_BUILD_TARGETS: build only these, in parallel, through the spmd_selection target (CMake's
  # Makefiles would build several --target goals one after another); unset: everything.
  local selection=() goal=()
  # shellcheck disable=SC2206
  local targets=(${SPMD_BUILD_TARGETS:-})
  if ((${#targets[@]})); then
    selection=("-DSPMD_SELECTION=$(IFS=';'; echo "${targets[*]}")")
    goal=(--target spmd_selection)
  else
    selection=(-DSPMD_SELECTION=)
  fi
  spmd_log "configuring $build"
  cmake -S "$SPMD_ROOT" -B "$build" "${args[@]}" "${selection[@]}" "$@" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; return 1; }
  spmd_log "building${SPMD_BUILD_TARGETS:+ ${targets[*]}} (log: $build.build.log)"
  cmake --build "$build" -j "${SPMD_JOBS:-$(nproc)}" "${goal[@]}" >"$build.build.log" 2>&1 ||
    { tail -60 "$build.build.log" >&2; return 1; }
}

# Kokkos 4.6.01 + Kokkos Kernels 4.6.02: their release archives are in no registry here; they
# come from the deps folder beside the clone, ${SPMD_DEPS_DIR:-<repo>/../shared/deps} (as in CI's
# machine layout). `spmd_k46_deps` prints that folder, or returns 1 when it lacks the archives or
# their SHA256SUMS; `spmd_k46_skip WHAT` says loudly that WHAT was skipped for that reason.
spmd_k46_deps() {
  local deps=${SPMD_DEPS_DIR:-$SPMD_ROOT/../shared/deps} f
  for f in kokkos-4.6.01.tar.gz kokkos-kernels-4.6.02.tar.gz SHA256SUMS; do
    [[ -f "$deps/$f" ]] || return 1
  done
  (cd "$deps" && pwd)
}
spmd_k46_skip() {
  local line='****************************************************************************'
  printf '[spmd] %s\n' "$line" "SKIPPED: $1" \
    "It needs kokkos-4.6.01.tar.gz, kokkos-kernels-4.6.02.tar.gz and SHA256SUMS in the deps" \
    "folder '${SPMD_DEPS_DIR:-$SPMD_ROOT/../shared/deps}' (set SPMD_DEPS_DIR); not found." "$line" >&2
}

# The cache prefix of a Kokkos 4.6 install for BACKEND (openmp or cuda; scripts/build-kokkos46.sh),
# keyed by the archives' checksums, the build script, the patch set (cuda), the Kokkos Kernels
# instantiations (SPMD_KK_ETI) and the compilers: a change to any of them builds a new one.
spmd_k46_prefix() {
  local backend=$1 deps cache key
  deps=$(spmd_k46_deps) || return 1
  cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
  key=$( { grep -E ' \*?kokkos(-kernels)?-4\.6\.0[12]\.tar\.gz$' "$deps/SHA256SUMS"
           cat "$SPMD_ROOT/scripts/build-kokkos46.sh"; ${CXX:-g++} --version | head -1
           echo "eti ${SPMD_KK_ETI:-none}"
           if [[ $backend == cuda ]]; then
             cat "$SPMD_ROOT/scripts/gpu/patch_kokkos.py"; nvcc --version | tail -1
           fi; } | sha1sum | cut -c1-10)
  if [[ $backend == cuda ]]; then echo "$cache/kokkos-4.6.01-cuda-hopper-$key"; else echo "$cache/kokkos-4.6.01-$backend-$key"; fi
}

# Builds (once; cached) and prints the Kokkos 4.6 install for BACKEND; returns 1, saying so
# loudly, when the deps folder is missing.
spmd_k46_install() {
  local backend=$1 prefix
  prefix=$(spmd_k46_prefix "$backend") || { spmd_k46_skip "the Kokkos 4.6 ($backend) build"; return 1; }
  "$SPMD_ROOT/scripts/build-kokkos46.sh" "$backend" "$(spmd_k46_deps)" "$prefix" || return 2
  echo "$prefix"
}

# Prints -DSPMD_ENABLE_HDF5=ON when a parallel HDF5 is installed (Debian's libhdf5-mpich-dev), so
# the checkpoint module is built and tested wherever it can be; nothing otherwise. Decide only
# after spmd_setup (a new machine gets the package there), else the first build has no HDF5.
spmd_hdf5_flag() {
  if dpkg-query -W -f='${Status}' libhdf5-mpich-dev 2>/dev/null | grep -q "install ok installed"; then
    echo "-DSPMD_ENABLE_HDF5=ON"
  fi
}

# The Python packages of the Python front (SPMD_ENABLE_PYTHON; docs/python.md) that Debian does not
# have, from PyPI, in a venv of their own beside the Kokkos cache: Debian's python3 stays untouched
# and its numpy/scipy/h5py stay visible (--system-site-packages). mpi4py is compiled against MPICH
# (mpicc.mpich), the MPI the library uses: its PyPI wheel expects another MPI's libmpi.so.12. Made
# once per pin set, interpreter and MPICH; prints the venv's python. SPMD_PYTHON_ENV overrides.
SPMD_PY_PINS="nanobind==3.1.0 scikit-build-core==1.1.2 pytest==9.2.0 mpi4py==4.1.2"
spmd_python_env() {
  local cache key venv py mpicc
  cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
  mpicc=${SPMD_MPICC:-$(command -v mpicc.mpich)}
  key=$( { echo "$SPMD_PY_PINS"; /usr/bin/python3 --version; "$mpicc" -show; mpichversion 2>/dev/null | head -1; } |
         sha1sum | cut -c1-10)
  venv=${SPMD_PYTHON_ENV:-$cache/python-venv-$key}
  py=$venv/bin/python
  if [[ ! -f "$venv/.complete" ]]; then
    spmd_log "making the Python venv $venv (PyPI: $SPMD_PY_PINS)"
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
    # shellcheck disable=SC2086
    MPICC=$mpicc "$py" -m pip install --no-cache-dir --no-binary mpi4py $SPMD_PY_PINS >&2 ||
      { spmd_log "pip install failed (PyPI unreachable?): the Python front needs $SPMD_PY_PINS"; return 1; }
    touch "$venv/.complete"
  fi
  echo "$py"
}
