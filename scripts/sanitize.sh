#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: build the library, the tests and the apps with
# GCC's -fsanitize=address,undefined (-O1, line tables, frame pointers kept; see below for the
# UBSan checks left out) in their own build folder and run the ctest suite there. Kokkos and
# Kokkos Kernels stay the cached, uninstrumented Release install of scripts/setup.sh. Any finding (a memory error, a leak of ours, undefined behaviour)
# stops the process that made it (halt_on_error), so the test fails and so does this script.
#
# Usage: ./scripts/sanitize.sh [ctest arguments]   (default: the tests at 1 and 2 ranks)
# Environment:
#   SPMD_ASAN_BUILD_DIR  build folder (default: <repo>/build-asan)
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
spmd_build "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$debug" -DCMAKE_CXX_FLAGS="$flags" \
  -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=OFF $(spmd_hdf5_flag)
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
# Skipped: the package tests (they build an uninstrumented consumer against the instrumented
# library) and the soak tests (labels soak, soak_short: they LD_PRELOAD a communicator probe,
# which ASan refuses to follow, and they measure RSS, which ASan's shadow memory swamps).
args=("$@")
((${#args[@]})) || args=(-L 'np[12]|fuzz')
ctest --output-on-failure -j "$(nproc)" -LE 'package|soak' "${args[@]}"
