#!/usr/bin/env bash
# On a GPU machine, after scripts/gpu/run.sh has built /tmp/spmd-build-cuda (SPMD_GPU_TARGETS may
# limit it to "bench_stencil bench_cg bench_reduce"): one point per device work item against
# several (the kernel layer's form for large boxes, impl::BoxItems), in one run of one build.
#   OUT=dir scripts/gpu/ab-items.sh      writes OUT/ab-items.log (medians of 3)
set -u
out=${OUT:-.}
b=${SPMD_BUILD:-/tmp/spmd-build-cuda}/perf
log=$out/ab-items.log
common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
for m in 1000000000000 0; do  # a huge threshold: one point per item; 0: the library's threshold
  echo "=== SPMD_BENCH_MULTI_POINTS=$m" >> "$log"
  export SPMD_BENCH_MULTI_POINTS=$m
  "$b/bench_stencil" "${common[@]}" --benchmark_filter='fused_(swap|inplace)/grid:(4096|16384)|3d_fused' 2>&1 | grep median >> "$log"
  "$b/bench_cg" "${common[@]}" \
    --benchmark_filter='BM_cg_stencil/dim:2/n:4096|BM_cg/dim:2/n:4096|laplacian_apply/dim:(2/n:4096|3/n:256)/exchange:0' 2>&1 |
    grep median >> "$log"
  "$b/bench_reduce" "${common[@]}" --benchmark_filter='BM_(dot|sum)/n:(1024|16777216)/' 2>&1 | grep median >> "$log"
done
