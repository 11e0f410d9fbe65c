#!/usr/bin/env bash
# Set up if needed, build everything, run every ctest test (1-4 ranks) but the long soak tests.
# Extra arguments go to ctest, e.g. `./scripts/test.sh -L np2`, `-R halo` or `-L soak`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$(dirname "$build")"
spmd_setup   # first: it installs the packages that spmd_hdf5_flag looks for
spmd_build "$build" -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=ON $(spmd_hdf5_flag)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
cd "$build"
# The long soak tests (label `soak`, minutes each) run only when asked for: `./scripts/test.sh -L soak`.
exclude=(-LE '^soak$')
[[ " $* " == *soak* ]] && exclude=()
ctest --output-on-failure -j "$(nproc)" "${exclude[@]}" "$@"
