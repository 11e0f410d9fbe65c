#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: build the library, the tests and the apps with
# GCC's -fsanitize=address,undefined (-O1, line tables, frame pointers kept; see below for the
# UBSan checks left out) in their own build folder and run the ctest suite there. Any finding (a
# memory error, a leak of ours, undefined behaviour) stops the process that made it
# (halt_on_error), so the test fails and so does this script.
#
# Kokkos and Kokkos Kernels are an uninstrumented Release install of Kokkos 4.6.01 + Kokkos
# Kernels 4.6.02 (Serial + OpenMP; scripts/build-kokkos46.sh, cached): this is also the suite's
# run against Kokkos 4.6 (the main build of scripts/test.sh is on 3.4.1), at 1 and 2 ranks.
# Without the Kokkos 4.6 archives (../shared/deps beside the clone, or SPMD_DEPS_DIR) it says so
# loudly and builds against the Kokkos 3.4.1 of scripts/setup.sh instead.
#
# What it builds and runs: for CI's time (the main suite of scripts/test.sh already runs every
# test at 1-4 ranks), the library and the test programs of the modules that own memory, move
# messages or read files (SPMD_SANITIZE_TESTS below), their tests at 1 and 2 ranks. The whole
# suite: SPMD_SANITIZE_ALL=1 (every test and app but the package and soak tests; about three
# times the build). The CUDA stage of .ci/run compiles the solvers and the apps against Kokkos
# (Kernels) 4.6 as well.
#
# Usage: ./scripts/sanitize.sh [ctest arguments]
# Environment:
#   SPMD_SANITIZE_TESTS  the test programs of the subset (default below; names without test_)
#   SPMD_SANITIZE_ALL=1  every test and app instead of the subset
#   SPMD_ASAN_BUILD_DIR  build folder (default: <repo>/build-asan)
#   SPMD_ASAN_MAX_RANKS  the largest rank count a test is registered at (default 2: the tests at
#                        3 and 4 ranks are too slow under the sanitizers on a 2-core CI machine)
#   SPMD_SANITIZE_BUILD_ONLY=1  configure and build, run nothing
#   SPMD_SANITIZE_FULL=1        every UBSan check and full -g (slower build; build-asan-full)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_ASAN_BUILD_DIR:-$SPMD_ROOT/build-asan}
supp=$SPMD_ROOT/scripts/sanitizers
mkdir -p "$(dirname "$build")"
# The checks. UBSan's `null` and `alignment` checks instrument every reference binding and member
# access of the Kokkos View code: with them (and full -g) the build costs 3.6x the CPU time of
# this selection (measured on tests/test_halo.cpp: 82 s against 23 s; a Release -O3 compile takes
# 17 s), more than CI can spend. A null dereference still stops the run (ASan reports the SEGV
# with its stack); misaligned access is what this selection does not see. -g1 (line tables) is
# what the reports' file:line stacks need. SPMD_SANITIZE_FULL=1 builds with every UBSan check
# and -g (in build-asan-full).
if [[ "${SPMD_SANITIZE_FULL:-0}" == 1 ]]; then
  build=${SPMD_ASAN_BUILD_DIR:-$SPMD_ROOT/build-asan-full}
  flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
  debug="-O1 -g"
else
  flags="-fsanitize=address,undefined -fno-sanitize=alignment,null -fno-omit-frame-pointer"
  debug="-O1 -g1"
fi
rc=0
k46=$(spmd_k46_install openmp) || rc=$?
if [[ $rc == 1 ]]; then
  spmd_k46_skip "the sanitizer build against Kokkos 4.6: building against Kokkos 3.4.1 instead"
  k46=""
elif [[ $rc != 0 ]]; then
  exit "$rc"
fi
# With the prefix given, setup.sh installs the packages but skips its Kokkos 3.4.1 bootstrap.
CMAKE_PREFIX_PATH="$k46${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" spmd_setup
subset=(${SPMD_SANITIZE_TESTS:-core array slice halo reduce redistribute backends sparse krylov preconditioners io errors fft})
selection=(-LE 'package|soak')
if [[ "${SPMD_SANITIZE_ALL:-0}" != 1 ]]; then
  export SPMD_BUILD_TARGETS="spmdarray ${subset[*]/#/test_}"
  selection=(-R "^test_($(IFS='|'; echo "${subset[*]}"))_np[0-9]+\$")
fi
CMAKE_PREFIX_PATH="$k46${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}" spmd_build "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$debug" -DCMAKE_CXX_FLAGS="$flags" \
  -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=OFF -DSPMD_TEST_MAX_RANKS="${SPMD_ASAN_MAX_RANKS:-2}" $(spmd_hdf5_flag)
if [[ -n "$k46" ]]; then
  grep -q "Kokkos 4.6.1" "$build.configure.log" ||
    { spmd_log "the configure did not pick Kokkos 4.6.1:"; grep -m3 "Kokkos" "$build.configure.log" >&2; exit 1; }
fi
[[ "${SPMD_SANITIZE_BUILD_ONLY:-0}" == 1 ]] && exit 0

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_init_order=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
# hwloc (under MPICH) leaves its PCI discovery out: where the libhwloc-plugins package is
# installed (it comes with Open MPI's packages), MPICH's topology load dlopens hwloc_pci.so, whose
# libpciaccess keeps 1016 bytes in 9 callocs past the plugin's unload; LeakSanitizer then reports
# them from "<unknown module>", where no suppression can name them (scripts/sanitizers/lsan.supp).
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--pci}
cd "$build"
# Skipped (with SPMD_SANITIZE_ALL=1): the package tests (they build an uninstrumented consumer against the instrumented
# library) and the soak tests (labels soak, soak_short: they LD_PRELOAD a communicator probe,
# which ASan refuses to follow, and they measure RSS, which ASan's shadow memory swamps).
ctest --output-on-failure -j "$(nproc)" "${selection[@]}" "$@"
