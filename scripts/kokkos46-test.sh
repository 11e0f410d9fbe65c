#!/usr/bin/env bash
# Compatibility build: spmdarray against Kokkos 4.6.01 + Kokkos Kernels 4.6.02 (Serial + OpenMP,
# Release, C++17, code deprecated in Kokkos 4 switched off, as Spack's kokkos builds it), then the
# whole test suite. The 3.4.1 build of scripts/test.sh stays the main one; this keeps the code on
# the API both versions have.
#
# The release sources are not in any registry here: they come from the deps folder
# ${SPMD_DEPS_DIR:-<repo>/../shared/deps} (kokkos-4.6.01.tar.gz, kokkos-kernels-4.6.02.tar.gz,
# SHA256SUMS). Without it (a user's clone) the script says so and exits 0: nothing else needs it.
#
# Kokkos + Kokkos Kernels are installed into a cache prefix outside the clone, keyed by the
# archives' checksums, the options and the compiler (like scripts/setup.sh):
#   ${SPMD_CACHE_DIR:-~/.cache/spmdarray}/kokkos-4.6.01-openmp-<key>
# Usage: ./scripts/kokkos46-test.sh [ctest args...]     (build dir: SPMD_K46_BUILD_DIR,
#        default ./build-kokkos46; SPMD_JOBS parallel jobs; SPMD_K46_MAX_RANKS, default 4: the
#        largest rank count a test is registered at, SPMD_TEST_MAX_RANKS of that build)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

deps=${SPMD_DEPS_DIR:-$SPMD_ROOT/../shared/deps}
k_tar=kokkos-4.6.01.tar.gz
kk_tar=kokkos-kernels-4.6.02.tar.gz
if [[ ! -f "$deps/$k_tar" || ! -f "$deps/$kk_tar" || ! -f "$deps/SHA256SUMS" ]]; then
  cat >&2 <<EOF
[spmd k46] ****************************************************************************
[spmd k46] SKIPPED: the Kokkos 4.6 compatibility build needs $k_tar, $kk_tar and
[spmd k46] SHA256SUMS in the deps folder '$deps' (set SPMD_DEPS_DIR); not found.
[spmd k46] Nothing was built or tested against Kokkos 4.6.
[spmd k46] ****************************************************************************
EOF
  exit 0
fi
deps=$(cd "$deps" && pwd)
log() { printf '[spmd k46] %s\n' "$*" >&2; }
# CPU seconds (user + system) of the finished child processes so far, from bash's `times`:
# with the wall time it says what a phase costs on an idle machine (CPU / cores).
# (`times` must run in this shell, not in a $(...) subshell: cpu_now sets CPU.)
times_file=$(mktemp) work=""
trap 'rm -f "$times_file"; [[ -z "$work" ]] || rm -rf "$work"' EXIT
cpu_now() {
  times >"$times_file"
  CPU=$(awk 'NR == 2 { n = split($1 " " $2, t, " "); s = 0
    for (i = 1; i <= n; i++) { split(t[i], p, "m"); s += p[1] * 60 + p[2] } printf "%d", s }' "$times_file")
}
summary=()
phase() {  # NAME T0 CPU0: appends "NAME W s (CPU C s)" to summary
  cpu_now
  summary+=("$(printf '%s %d s (CPU %d s)' "$1" $(($(date +%s) - $2)) $((CPU - $3)))")
}

# The archives must be the ones SHA256SUMS names (a truncated copy fails here, not mid-build).
sums=$(grep -E " \*?($k_tar|$kk_tar)\$" "$deps/SHA256SUMS") || { log "SHA256SUMS lists neither archive"; exit 1; }
[[ $(wc -l <<<"$sums") -eq 2 ]] || { log "SHA256SUMS must list both $k_tar and $kk_tar"; exit 1; }
(cd "$deps" && sha256sum --quiet -c - <<<"$sums") || { log "checksum mismatch in $deps"; exit 1; }

cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
jobs=${SPMD_JOBS:-$(nproc)}
# Shared libraries, as Spack builds them (and scripts/setup.sh): libspmdarray.so links them;
# RUNPATH $ORIGIN so that libkokkoskernels.so finds libkokkoscontainers.so beside it.
k_opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
        -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON
        -DKokkos_ENABLE_DEPRECATED_CODE_4=OFF -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF)
# The same minimal instantiations as scripts/setup.sh (double, int ordinals and offsets,
# LayoutLeft, the OpenMP execution space only), and only the components spmdarray uses (BLAS,
# SPARSE and what SPARSE needs).
kk_opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
         -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF -DKokkosKernels_ENABLE_TESTS=OFF
         -DKokkosKernels_ENABLE_EXAMPLES=OFF -DKokkosKernels_ENABLE_PERFTESTS=OFF
         -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON
         -DKokkosKernels_ENABLE_COMPONENT_SPARSE=ON
         -DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF
         -DKokkosKernels_INST_COMPLEX_FLOAT=OFF -DKokkosKernels_INST_ORDINAL_INT=ON
         -DKokkosKernels_INST_ORDINAL_INT64_T=OFF -DKokkosKernels_INST_OFFSET_INT=ON
         -DKokkosKernels_INST_OFFSET_SIZE_T=OFF -DKokkosKernels_INST_LAYOUTLEFT=ON
         -DKokkosKernels_INST_LAYOUTRIGHT=OFF -DKokkosKernels_ENABLE_TPL_BLAS=OFF
         -DKokkosKernels_ENABLE_TPL_LAPACK=OFF)
key=$( (echo "$sums"; echo "${k_opts[*]}"; echo "${kk_opts[*]}"; ${CXX:-g++} --version | head -1) |
       sha1sum | cut -c1-10)
prefix="$cache/kokkos-4.6.01-openmp-$key"

if [[ -f "$prefix/.complete" ]]; then
  log "Kokkos 4.6.01 + Kokkos Kernels 4.6.02 cached at $prefix"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/spmd-k46.XXXXXX")
  tar -xzf "$deps/$k_tar" -C "$work"
  tar -xzf "$deps/$kk_tar" -C "$work"
  rm -rf "$prefix"
  cpu_now; t0=$(date +%s) c0=$CPU
  log "building Kokkos 4.6.01 (Serial + OpenMP) into $prefix"
  { cmake -S "$work/kokkos-4.6.01" -B "$work/b-kokkos" -DCMAKE_INSTALL_PREFIX="$prefix" "${k_opts[@]}" &&
    cmake --build "$work/b-kokkos" -j "$jobs" && cmake --install "$work/b-kokkos"; } >"$work/kokkos.log" 2>&1 ||
    { tail -50 "$work/kokkos.log" >&2; exit 1; }
  phase "Kokkos" "$t0" "$c0"
  t1=$(date +%s) c1=$CPU
  log "${summary[-1]}; Kokkos Kernels 4.6.02 next (several minutes on 2 cores)"
  { cmake -S "$work/kokkos-kernels-4.6.02" -B "$work/b-kk" -DCMAKE_INSTALL_PREFIX="$prefix" \
      -DKokkos_ROOT="$prefix" "${kk_opts[@]}" &&
    cmake --build "$work/b-kk" -j "$jobs" && cmake --install "$work/b-kk"; } >"$work/kk.log" 2>&1 ||
    { tail -50 "$work/kk.log" >&2; exit 1; }
  phase "Kokkos Kernels" "$t1" "$c1"
  log "${summary[-1]}"
  printf '%s\n' "${summary[@]}" >"$prefix/build-times.txt"
  touch "$prefix/.complete"
fi

# spmdarray against it, in its own build folder. CMAKE_PREFIX_PATH is set for the configure only
# (setup.sh then skips its own bootstrap): the installed-package test (consumer_*) must find
# Kokkos through what the installed spmdarrayConfig.cmake remembers, not through the environment.
build=${SPMD_K46_BUILD_DIR:-$SPMD_ROOT/build-kokkos46}
mkdir -p "$(dirname "$build")"
CMAKE_PREFIX_PATH="$prefix" spmd_setup   # packages first (spmd_hdf5_flag); no 3.4.1 bootstrap
cpu_now; t3=$(date +%s) c3=$CPU
# The library, the apps and the tests (the benchmarks compile against Kokkos 3.4.1 in test.sh and
# on the GPU machines; leaving them out here keeps CI within its time as the tests grow;
# SPMD_K46_BENCHMARKS=ON puts them back).
CMAKE_PREFIX_PATH="$prefix" spmd_build "$build" -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON \
  -DSPMD_ENABLE_BENCHMARKS="${SPMD_K46_BENCHMARKS:-OFF}" -DSPMD_TEST_MAX_RANKS="${SPMD_K46_MAX_RANKS:-4}" \
  $(spmd_hdf5_flag)
grep -q "Kokkos 4.6.1" "$build.configure.log" ||
  { log "the configure did not pick Kokkos 4.6.1:"; grep -m3 "Kokkos" "$build.configure.log" >&2; exit 1; }
phase "spmdarray build" "$t3" "$c3"
log "${summary[-1]}; running the tests"
t4=$(date +%s) c4=$CPU
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
rc=0
# The long soak tests (label soak) only when asked for, as in scripts/test.sh.
exclude=(-LE '^soak$')
[[ " $* " == *soak* ]] && exclude=()
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "${exclude[@]}" "$@") || rc=$?
phase "tests" "$t4" "$c4"
log "Kokkos 4.6: $(IFS=';'; echo "${summary[*]}" | sed 's/;/; /g')"
exit $rc
