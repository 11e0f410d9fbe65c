#!/usr/bin/env bash
# Build (compile + link, no run) the CUDA variant of spmdarray on a machine with nvcc but maybe
# no GPU: Kokkos 4.6.01 + Kokkos Kernels 4.6.02 for CUDA (Hopper; the project's CUDA 13 patch
# set) cached under ~/.cache/spmdarray/ (scripts/build-kokkos46.sh), then every target with
# CUDA + NCCL, against MPICH. Skipped (exit 0, loudly) without nvcc or without the Kokkos 4.6
# archives (../shared/deps beside the clone, or SPMD_DEPS_DIR).
#   ./scripts/cuda-build.sh          (build dir: SPMD_CUDA_BUILD_DIR, default ./build-cuda;
#                                     SPMD_CUDA_BENCHMARKS=OFF leaves out the benchmarks;
#                                     SPMD_CUDA_TARGETS="a b ..." builds only those targets)
# The binaries for the GPU machines are built against their MPI by scripts/gpu/device-build.sh.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if ! command -v nvcc >/dev/null; then
  spmd_log "nvcc not found: skipping the CUDA build"
  exit 0
fi
rc=0
prefix=$(spmd_k46_install cuda) || rc=$?
if [[ $rc == 1 ]]; then exit 0; elif [[ $rc != 0 ]]; then exit "$rc"; fi
# Debian packages (MPICH, HDF5, GoogleTest, ...); with the prefix given, no Kokkos 3.4.1 bootstrap.
CMAKE_PREFIX_PATH="$prefix" spmd_setup
build=${SPMD_CUDA_BUILD_DIR:-$SPMD_ROOT/build-cuda}
mkdir -p "$(dirname "$build")"
t0=$(date +%s)
SPMD_BUILD_TARGETS="${SPMD_CUDA_TARGETS:-}" CMAKE_PREFIX_PATH="$prefix" CMAKE_POLICY_VERSION_MINIMUM=3.5 spmd_build "$build" \
  -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_TESTS=ON \
  -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS="${SPMD_CUDA_BENCHMARKS:-ON}" $(spmd_hdf5_flag)
grep -q "Kokkos 4.6.1" "$build.configure.log" ||
  { spmd_log "the configure did not pick Kokkos 4.6.1:"; grep -m3 "Kokkos" "$build.configure.log" >&2; exit 1; }
spmd_log "CUDA build ok in $(($(date +%s) - t0)) s (${SPMD_CUDA_TARGETS:-every target}): $(find "$build" -maxdepth 3 -type f -executable -name 'test_*' | wc -l) test programs linked"
