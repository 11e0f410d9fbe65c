#!/usr/bin/env bash
# Set up if needed, build the benchmarks, run them at 1 and 2 ranks (OMP_NUM_THREADS=1), write
# Google Benchmark JSON into RESULTS (default ./bench-results) and print a summary table.
#   ./scripts/bench.sh [RESULTS] [extra benchmark flags...]
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
results=$(realpath -m "${1:-$SPMD_ROOT/bench-results}")
shift || true
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
mkdir -p "$results" "$(dirname "$build")"
spmd_build "$build" -DSPMD_ENABLE_BENCHMARKS=ON
mpiexec=$(grep -E '^MPIEXEC_EXECUTABLE:' "$build/CMakeCache.txt" | head -1 | cut -d= -f2)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OMP_PROC_BIND=${OMP_PROC_BIND:-false}
flags=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out_format=json "$@")
for np in 1 2; do
  for b in triad reduce halo; do
    spmd_log "bench_$b at $np rank(s)"
    "${mpiexec:-mpiexec}" -n "$np" "$build/perf/bench_$b" "${flags[@]}" \
      --benchmark_out="$results/${b}_np$np.json" > "$results/${b}_np$np.log" 2>&1 ||
      { tail -20 "$results/${b}_np$np.log" >&2; exit 1; }
  done
done
/usr/bin/python3 "$SPMD_ROOT/perf/summarize.py" "$results"
