#!/usr/bin/env bash
# Set up if needed, build, and run the main job on 2 ranks: apps/cg_solver, CG on the 2-D Poisson
# problem with 1024 x 1024 unknowns (b = A u* for a known u*) to a relative residual of 1e-8.
# Extra arguments go to the app, e.g. `./scripts/demo.sh --n 2048 --pipelined --monitor 100`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$(dirname "$build")"
spmd_build "$build" -DSPMD_ENABLE_APPS=ON
mpiexec=$(grep -E '^MPIEXEC_EXECUTABLE:' "$build/CMakeCache.txt" | head -1 | cut -d= -f2)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
set -x
"${mpiexec:-mpiexec}" -n 2 "$build/apps/cg_solver" --problem poisson2d --n 1024 --tol 1e-8 --monitor 250 "$@"
