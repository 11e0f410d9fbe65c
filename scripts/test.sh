#!/usr/bin/env bash
# Set up if needed, build everything, run every ctest test (1-4 ranks). Extra arguments go to
# ctest, e.g. `./scripts/test.sh -L np2` or `-R halo`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$(dirname "$build")"
spmd_setup   # first: it installs the packages that spmd_hdf5_flag looks for
spmd_build "$build" -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=ON $(spmd_hdf5_flag)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
