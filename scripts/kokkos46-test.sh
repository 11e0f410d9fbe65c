#!/usr/bin/env bash
# Compatibility build: spmdarray against Kokkos 4.6.01 + Kokkos Kernels 4.6.02 (Serial + OpenMP,
# Release, C++17, code deprecated in Kokkos 4 switched off, as Spack's kokkos builds it), then the
# whole test suite. The 3.4.1 build of scripts/test.sh stays the main one; this keeps the code on
# the API both versions have.
#
# The release sources are not in any registry here: they come from the deps folder
# ${SPMD_DEPS_DIR:-<repo>/../shared/deps} (kokkos-4.6.01.tar.gz, kokkos-kernels-4.6.02.tar.gz,
# SHA256SUMS). Without it (a user's clone) the script says so and exits 0: nothing else needs it.
# CI does not run this script: its sanitizer stage (scripts/sanitize.sh) builds against the same
# Kokkos 4.6 install and runs the suite at 1 and 2 ranks.
#
# Kokkos + Kokkos Kernels are installed by scripts/build-kokkos46.sh into a cache prefix outside
# the clone, keyed by the archives' checksums, the build script and the compiler:
#   ${SPMD_CACHE_DIR:-~/.cache/spmdarray}/kokkos-4.6.01-openmp-<key>
# Usage: ./scripts/kokkos46-test.sh [ctest args...]     (build dir: SPMD_K46_BUILD_DIR,
#        default ./build-kokkos46; SPMD_JOBS parallel jobs; SPMD_K46_MAX_RANKS, default 4: the
#        largest rank count a test is registered at, SPMD_TEST_MAX_RANKS of that build)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

log() { printf '[spmd k46] %s\n' "$*" >&2; }
summary=()
phase() {  # NAME T0 CPU0: appends "NAME W s (CPU C s)" to summary
  spmd_cpu_now
  summary+=("$(printf '%s %d s (CPU %d s)' "$1" $(($(date +%s) - $2)) $((CPU - $3)))")
}

# Kokkos + Kokkos Kernels 4.6 (Serial + OpenMP; scripts/build-kokkos46.sh), cached.
rc=0
prefix=$(spmd_k46_install openmp) || rc=$?
if [[ $rc == 1 ]]; then exit 0; elif [[ $rc != 0 ]]; then exit "$rc"; fi
[[ -f "$prefix/build-times.txt" ]] && summary+=("$(paste -sd';' "$prefix/build-times.txt")")

# spmdarray against it, in its own build folder. CMAKE_PREFIX_PATH is set for the configure only
# (setup.sh then skips its own bootstrap): the installed-package test (consumer_*) must find
# Kokkos through what the installed spmdarrayConfig.cmake remembers, not through the environment.
build=${SPMD_K46_BUILD_DIR:-$SPMD_ROOT/build-kokkos46}
mkdir -p "$(dirname "$build")"
CMAKE_PREFIX_PATH="$prefix" spmd_setup   # packages first (spmd_hdf5_flag); no 3.4.1 bootstrap
spmd_cpu_now; t3=$(date +%s) c3=$CPU
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
