#!/usr/bin/env bash
# Set up if needed, build, and run the main job on 2 ranks: apps/heat on a 1024 x 1024 grid.
# Extra arguments go to the app, e.g. `./scripts/demo.sh --n 2048 --steps 1000`.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$(dirname "$build")"
spmd_build "$build" -DSPMD_ENABLE_APPS=ON
mpiexec=$(grep -E '^MPIEXEC_EXECUTABLE:' "$build/CMakeCache.txt" | head -1 | cut -d= -f2)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
set -x
"${mpiexec:-mpiexec}" -n 2 "$build/apps/heat" --n 1024 --steps 500 --every 100 "$@"
