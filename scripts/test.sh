#!/usr/bin/env bash
# Set up if needed, build everything (the Python package too), run every ctest test (1-4 ranks) but
# the long soak tests.
# Extra arguments go to ctest, e.g. `./scripts/test.sh -L np2`, `-R halo` or `-L soak`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$(dirname "$build")"
spmd_setup   # first: it installs the packages that spmd_hdf5_flag looks for
# The Python package and its pytest runs at 1-4 ranks (docs/python.md), unless SPMD_TEST_PYTHON=0:
# nanobind, scikit-build-core, pytest and mpi4py come from PyPI into a venv of their own beside the
# Kokkos cache (spmd_python_env; once per machine).
python_args=(-DSPMD_ENABLE_PYTHON=OFF)
if [[ "${SPMD_TEST_PYTHON:-1}" != 0 ]]; then
  py=$(spmd_python_env) || {
    spmd_log "the Python front's packages could not be installed (above); SPMD_TEST_PYTHON=0 tests without it"
    exit 1
  }
  python_args=(-DSPMD_ENABLE_PYTHON=ON "-DPython_EXECUTABLE=$py")
fi
spmd_build "$build" -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=ON $(spmd_hdf5_flag) \
  "${python_args[@]}"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
cd "$build"
# The long soak tests (label `soak`, minutes each) run only when asked for: `./scripts/test.sh -L soak`.
exclude=(-LE '^soak$')
[[ " $* " == *soak* ]] && exclude=()
ctest --output-on-failure -j "$(nproc)" "${exclude[@]}" "$@"
