#!/usr/bin/env bash
# Valgrind memcheck over a few tests at 1 rank, on the ordinary (uninstrumented Release) build of
# scripts/test.sh: the Matrix Market reader, the core (Comm, Distribution) and the error paths'
# neighbours, and the fuzz replay. A memcheck error or a definite leak of ours exits non-zero
# (--error-exitcode). Suppressions: scripts/sanitizers/valgrind.supp (MPICH and Kokkos internals).
#
# Usage: ./scripts/valgrind.sh   (in SPMD_BUILD_DIR, default <repo>/build; builds it when needed)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
build=${SPMD_BUILD_DIR:-$SPMD_ROOT/build}
command -v valgrind >/dev/null || { spmd_log "valgrind is not installed (apt-get install valgrind)"; exit 1; }
# The configuration of scripts/test.sh (so that after it, as in CI, this configures and builds
# nothing new).
mkdir -p "$(dirname "$build")"
spmd_build "$build" -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS=ON $(spmd_hdf5_flag)
mpiexec=${SPMD_MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false
# No PCI discovery in MPICH's hwloc: its plugin's libpciaccess leaks past the unload (sanitize.sh).
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--pci}
vg=(valgrind --tool=memcheck --error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes --num-callers=30
    --suppressions="$SPMD_ROOT/scripts/sanitizers/valgrind.supp" --gen-suppressions=all)
status=0
run() {
  local what=$1
  shift
  spmd_log "valgrind: $what"
  local t0=$SECONDS
  if "$@" >"$build/valgrind-$what.log" 2>&1; then
    spmd_log "  clean ($((SECONDS - t0)) s)"
  else
    tail -80 "$build/valgrind-$what.log" >&2
    spmd_log "  FAILED: $what (log: $build/valgrind-$what.log)"
    status=1
  fi
}
for t in test_core test_array test_halo test_reduce test_redistribute test_sparse test_solvers; do
  run "$t" "$mpiexec" -n 1 "${vg[@]}" "$build/tests/$t"
done
run app_cg_solver "$mpiexec" -n 1 "${vg[@]}" "$build/apps/cg_solver" --problem poisson2d --n 24 --tol 1e-8 \
  --check-error 1e-5
run fuzz_replay "${vg[@]}" "$build/tests/fuzz_replay_matrix_market" "$SPMD_ROOT/tests/fuzz/corpus/matrix_market" \
  "$SPMD_ROOT/tests/fuzz/regressions/matrix_market"
exit $status
