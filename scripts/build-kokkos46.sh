#!/usr/bin/env bash
# Build Kokkos 4.6.01 + Kokkos Kernels 4.6.02 into PREFIX, for the host or for CUDA:
#   openmp  Serial + OpenMP (Release, C++17), as Spack's kokkos builds it: the compatibility and
#           sanitizer builds (scripts/kokkos46-test.sh, scripts/sanitize.sh)
#   cuda    CUDA + OpenMP + Serial, Kokkos_ARCH_HOPPER90 (H100/H200), CUDA lambdas, with the
#           project's CUDA 13 patch set (scripts/gpu/patch_kokkos.py) and Kokkos' nvcc_wrapper;
#           Kokkos Kernels with the cuBLAS and cuSPARSE TPLs. Compile only where there is no GPU.
# Both: shared libraries (libspmdarray.so links them), RUNPATH $ORIGIN (libkokkoskernels.so
# finds libkokkoscore.so beside it wherever the install is copied), deprecated Kokkos 4 code
# off, only the Kokkos Kernels components spmdarray uses (BLAS, SPARSE and what SPARSE needs).
# Idempotent: nothing to do when PREFIX/.complete exists. scripts/common.sh's spmd_k46_install
# picks PREFIX (a cache folder keyed by this script, the patch set, the archives, the compilers).
#
# Usage: build-kokkos46.sh openmp|cuda DEPS PREFIX
#   DEPS  the folder holding kokkos-4.6.01.tar.gz, kokkos-kernels-4.6.02.tar.gz and SHA256SUMS
#         (../shared/deps beside the clone)
# Environment: SPMD_JOBS (default nproc); SPMD_KK_ETI (default none):
#   none  Kokkos Kernels instantiates nothing: the few calls spmdarray makes (spmv, gemv, gemm)
#         compile in the files that make them. Kokkos Kernels then builds in minutes.
#   host  (openmp) double values, int ordinals and offsets, LayoutLeft, on <OpenMP, HostSpace>:
#         every algorithm of its components for those types, about half an hour on 2 cores.
#   cuda  (cuda) the same types on <Cuda, CudaSpace> only: 74 files, each of its components (the
#         SPARSE component brings BATCHED, GRAPH and LAPACK) for those types, most of them heavy
#         for nvcc (more than half an hour on 2 cores).
# (docs/gpu.md gives the measured cost of each.)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
usage="usage: build-kokkos46.sh openmp|cuda DEPS PREFIX"
backend=${1:?$usage} deps=${2:?$usage} prefix=${3:?$usage}
jobs=${SPMD_JOBS:-$(nproc)}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
log() { printf '[spmd kokkos46 %s] %s\n' "$backend" "$*" >&2; }
[[ -f "$prefix/.complete" ]] && { log "cached at $prefix"; exit 0; }
k=kokkos-4.6.01 kk=kokkos-kernels-4.6.02
sums=$(grep -E " \*?($k|$kk)\.tar\.gz\$" "$deps/SHA256SUMS") && [[ $(wc -l <<<"$sums") -eq 2 ]] ||
  { log "$deps/SHA256SUMS must list $k.tar.gz and $kk.tar.gz"; exit 1; }
# The archives must be the ones SHA256SUMS names (a truncated copy fails here, not mid-build).
(cd "$deps" && sha256sum --quiet -c - <<<"$sums") || { log "checksum mismatch in $deps"; exit 1; }

common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
        -DCMAKE_INSTALL_PREFIX="$prefix")
k_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_DEPRECATED_CODE_4=OFF
        -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF)
kk_opts=(-DKokkos_ROOT="$prefix" -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF
         -DKokkosKernels_ENABLE_PERFTESTS=OFF -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF
         -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON -DKokkosKernels_ENABLE_COMPONENT_SPARSE=ON
         -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_LAPACK=OFF)
# The instantiations: double values, int ordinals and offsets, LayoutLeft ...
eti=(-DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF
     -DKokkosKernels_INST_COMPLEX_FLOAT=OFF -DKokkosKernels_INST_ORDINAL_INT=ON
     -DKokkosKernels_INST_ORDINAL_INT64_T=OFF -DKokkosKernels_INST_OFFSET_INT=ON
     -DKokkosKernels_INST_OFFSET_SIZE_T=OFF -DKokkosKernels_INST_LAYOUTLEFT=ON -DKokkosKernels_INST_LAYOUTRIGHT=OFF
     -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF)
case $backend in
  openmp) ;;
  cuda)
    common+=(-DCMAKE_CXX_COMPILER=@NVCC_WRAPPER@)
    k_opts+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_HOPPER90=ON)
    kk_opts+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_CUSPARSE=ON
              -DKokkosKernels_ENABLE_TPL_CUSOLVER=OFF -DKokkosKernels_ENABLE_TPL_MAGMA=OFF) ;;
  *) log "$usage"; exit 2 ;;
esac
case $backend/${SPMD_KK_ETI:-none} in
  openmp/host) ;;  # ... on the OpenMP space (the default one there)
  cuda/cuda) eti+=(-DKokkosKernels_INST_EXECSPACE_CUDA=ON -DKokkosKernels_INST_MEMSPACE_CUDASPACE=ON
                   -DKokkosKernels_INST_MEMSPACE_CUDAUVMSPACE=OFF -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF
                   -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF) ;;
  */none) eti=(-DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
               -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_OFFSET_INT=OFF
               -DKokkosKernels_INST_OFFSET_SIZE_T=OFF -DKokkosKernels_INST_LAYOUTLEFT=OFF
               -DKokkosKernels_INST_EXECSPACE_CUDA=OFF -DKokkosKernels_INST_MEMSPACE_CUDASPACE=OFF
               -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF
               -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF) ;;
  *) log "SPMD_KK_ETI must be none, or host for openmp, or cuda for cuda (got '${SPMD_KK_ETI}')"; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/spmd-k46-$backend.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$deps/$k.tar.gz" -C "$work"
tar -xzf "$deps/$kk.tar.gz" -C "$work"
if [[ $backend == cuda ]]; then
  python3 "$SPMD_ROOT/scripts/gpu/patch_kokkos.py" "$work/$k" >&2
  common=("${common[@]/@NVCC_WRAPPER@/$work/$k/bin/nvcc_wrapper}")
fi
rm -rf "$prefix"
failed() {  # LOG: its errors, and the whole log kept beside the prefix
  grep -m20 -B2 -A8 -E '(error|Error)[: ]' "$1" >&2 || tail -50 "$1" >&2
  cp "$1" "$prefix.failed.log" && log "FAILED; the log is in $prefix.failed.log"
  exit 1
}
spmd_cpu_now; t0=$(date +%s) c0=$CPU
log "Kokkos 4.6.01 -> $prefix"
{ cmake -S "$work/$k" -B "$work/b-kokkos" "${common[@]}" "${k_opts[@]}" &&
  cmake --build "$work/b-kokkos" -j "$jobs" && cmake --install "$work/b-kokkos"; } >"$work/kokkos.log" 2>&1 ||
  failed "$work/kokkos.log"
if [[ $backend == cuda ]]; then
  grep -q "define KOKKOS_ENABLE_CUDA_LAMBDA" "$prefix/include/KokkosCore_config.h" &&
    grep -q "define KOKKOS_ARCH_HOPPER90" "$prefix/include/KokkosCore_config.h" ||
    { log "the install lacks KOKKOS_ENABLE_CUDA_LAMBDA or KOKKOS_ARCH_HOPPER90"; exit 1; }
  # Consumers compile with the patched wrapper (its default architecture is sm_90).
  grep -q 'default_arch="sm_90"' "$prefix/bin/nvcc_wrapper" || { log "the installed nvcc_wrapper is not patched"; exit 1; }
fi
spmd_cpu_now; t1=$(date +%s) c1=$CPU
# Kokkos Kernels with the installed wrapper, as its users compile.
[[ $backend == cuda ]] && common=("${common[@]/#-DCMAKE_CXX_COMPILER=*/-DCMAKE_CXX_COMPILER=$prefix/bin/nvcc_wrapper}")
times=("$(printf 'Kokkos %d s (CPU %d s)' $((t1 - t0)) $((c1 - c0)))")
log "${times[0]}; Kokkos Kernels 4.6.02 next (several minutes on 2 cores)"
{ cmake -S "$work/$kk" -B "$work/b-kk" "${common[@]}" "${kk_opts[@]}" "${eti[@]}" &&
  cmake --build "$work/b-kk" -j "$jobs" && cmake --install "$work/b-kk"; } >"$work/kk.log" 2>&1 ||
  failed "$work/kk.log"
spmd_cpu_now; t2=$(date +%s)
times+=("$(printf 'Kokkos Kernels %d s (CPU %d s)' $((t2 - t1)) $((CPU - c1)))")
printf '%s\n' "${times[@]}" "on $(nproc) cores; load average at the start $load0, at the end $(cut -d' ' -f1-3 /proc/loadavg)" \
  >"$prefix/build-times.txt"
touch "$prefix/.complete"
log "installed at $prefix: ${times[*]}"
