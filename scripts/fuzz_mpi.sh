#!/usr/bin/env bash
# The fuzzers that run the library and the apps themselves under MPI (docs/reliability.md), on the
# ordinary Release build (SPMD_BUILD_DIR, default build/; the targets are built when missing):
#
#   files  tests/fuzz/checkpoint_file_fuzz.cpp at 2 ranks: whole checkpoint files damaged and read
#          through inspect, verify, load_into, find_latest and claim. A crash, a hang or a broken
#          property fails the script and copies the input into tests/fuzz/checkpoint_file_regressions/
#          (ctest's checkpoint_file_replay_np{1,2} replays that folder).
#   argv   apps/common/fuzz_argv.py: random and mutated command lines of the five apps, at 1 and 2
#          ranks and as MPMD launches with another argv on one rank; each must run or end with one
#          agreed error. A failing command line is printed as a line for tests/fuzz/argv_regressions.txt.
#
# Usage: ./scripts/fuzz_mpi.sh files|argv [SECONDS (50)] [SEED]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
what=${1:?usage: fuzz_mpi.sh files|argv [SECONDS] [SEED]}
seconds=${2:-50}
seed=${3:-}
build=${SPMD_BUILD_DIR:-$root/build}
mpiexec=${SPMD_MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
python=${SPMD_PYTHON:-/usr/bin/python3}
log() { printf '[spmd fuzz_mpi] %s\n' "$*" >&2; }
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false

case $what in
  files)
    [[ -x $build/tests/checkpoint_file_fuzz ]] || cmake --build "$build" --target checkpoint_file_fuzz -j "$(nproc)"
    out=$build/fuzz-checkpoint-files
    rm -rf "$out/artifacts"
    log "damaging checkpoint files for ${seconds}s at 2 ranks"
    status=0
    "$mpiexec" -n 2 "$build/tests/checkpoint_file_fuzz" --seconds "$seconds" ${seed:+--seed "$seed"} --work "$out" \
      --artifacts "$out/artifacts" || status=$?
    if ((status != 0)); then
      if [[ -f $out/artifacts/current-input.h5 ]]; then
        dest=$root/tests/fuzz/checkpoint_file_regressions/crash-$(sha1sum "$out/artifacts/current-input.h5" | cut -c1-12).h5
        cp "$out/artifacts/current-input.h5" "$dest"
        log "FAILED (exit $status): the input is now $dest; fix the reader and commit it"
      else
        log "FAILED (exit $status)"
      fi
      exit 1
    fi
    ;;
  argv)
    apps=(heat stencil cfd swe cg_solver spectral)
    missing=()
    for a in "${apps[@]}"; do [[ -x $build/apps/$a ]] || missing+=("$a"); done
    ((${#missing[@]} == 0)) || cmake --build "$build" --target "${missing[@]}" -j "$(nproc)"
    log "fuzzing the apps' command lines for ${seconds}s"
    "$python" "$root/apps/common/fuzz_argv.py" "$mpiexec" "$build/apps" "$build/fuzz-argv" --seconds "$seconds" \
      ${seed:+--seed "$seed"}
    ;;
  *)
    log "unknown fuzzer '$what' (files or argv)"
    exit 2
    ;;
esac
