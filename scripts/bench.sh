#!/usr/bin/env bash
# Build the spmdarray benchmarks (perf/) and run them at 1 and 2 ranks, writing Google Benchmark
# JSON into a results folder. See docs/performance.md.
#
#   scripts/bench.sh [RESULTS_DIR] [extra Google Benchmark flags...]
#
# RESULTS_DIR defaults to ./bench-results; it receives <bench>_np<N>.json and <bench>_np<N>.txt
# (the console table) for bench in triad, reduce, halo and N in $SPMD_BENCH_RANKS.
# Environment:
#   SPMD_BENCH_BUILD_DIR    build folder (default: <repo>/build-bench)
#   SPMD_BENCH_RANKS        rank counts (default: "1 2"; keep N <= cores for meaningful timings)
#   SPMD_BENCH_REPETITIONS  --benchmark_repetitions (default: 5)
#   SPMD_JOBS               build jobs (default: 1)
#   OMP_NUM_THREADS         threads per rank (default: 1)
#   MPIEXEC                 launcher (default: mpiexec.mpich if present, else mpiexec)
# The Kokkos prefix comes from scripts/setup.sh (its last line, SPMD_KOKKOS_PREFIX=<path>), as
# for the tests.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
out=${1:-./bench-results}
if (($# > 0)); then shift; fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${SPMD_BENCH_BUILD_DIR:-$root/build-bench}
ranks=${SPMD_BENCH_RANKS:-1 2}
reps=${SPMD_BENCH_REPETITIONS:-5}
jobs=${SPMD_JOBS:-1}
log() { printf '[spmd bench] %s\n' "$*" >&2; }

prefix_line=$("$here/setup.sh" | tail -1)
case "$prefix_line" in
  SPMD_KOKKOS_PREFIX=*) prefix=${prefix_line#SPMD_KOKKOS_PREFIX=} ;;
  *) log "scripts/setup.sh did not end with SPMD_KOKKOS_PREFIX=...: '$prefix_line'"; exit 1 ;;
esac

cmake_args=(-DSPMD_ENABLE_BENCHMARKS=ON -DCMAKE_BUILD_TYPE=Release)
[[ -n "$prefix" ]] && cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}")
if [[ -z "${MPIEXEC:-}" ]] && command -v mpicxx.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  cmake_args+=(-DMPI_CXX_COMPILER=mpicxx.mpich "-DMPIEXEC_EXECUTABLE=$(command -v mpiexec.mpich)")
fi
mpiexec=${MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}

log "configuring $build"
cmake -S "$root" -B "$build" "${cmake_args[@]}" >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log" >&2; exit 1; }
log "building bench_triad bench_reduce bench_halo (-j$jobs)"
cmake --build "$build" --target bench_triad bench_reduce bench_halo -j "$jobs"

export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export OMP_PROC_BIND=${OMP_PROC_BIND:-false}  # 'true' would pin every rank's thread to core 0
cores=$(nproc)
for np in $ranks; do
  if ((np * OMP_NUM_THREADS > cores)); then
    log "warning: $np ranks x $OMP_NUM_THREADS threads > $cores cores: the timings measure oversubscription"
  fi
  for b in triad reduce halo; do
    log "bench_$b at $np rank(s) -> $out/${b}_np$np.json"
    "$mpiexec" -n "$np" "$build/perf/bench_$b" --benchmark_repetitions="$reps" \
      --benchmark_report_aggregates_only=true --benchmark_out="$out/${b}_np$np.json" \
      --benchmark_out_format=json "$@" | tee "$out/${b}_np$np.txt"
  done
done
if command -v python3 >/dev/null; then
  python3 "$root/perf/summarize.py" "$out" >"$out/summary.md" && log "summary: $out/summary.md"
fi
