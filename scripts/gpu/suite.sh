#!/usr/bin/env bash
# On a lent GPU machine, through run-carried.sh: the ctest suite within a time budget, for a pack
# that holds part of a build (device-build.sh SPMD_DEV_PACK_EXCLUDE: a build of every target packs
# to more than a device call's 64 MiB). Two passes: every selected test with ranks sharing GPUs where
# they outnumber them (SPMD_SHARE_GPUS=1), then the selected tests registered at 1..GPUs ranks with
# one rank per GPU and NCCL. What a pass had no time for is said; logs and a failure digest go to
# $out (suite.txt, ctest-TAG.log, failures.txt).
#
#   bash .carry/run-carried.sh exec scripts/gpu/suite.sh BUDGET_S [EXCLUDE_RE [INCLUDE_RE | @FILE]]
#
# EXCLUDE_RE: tests whose programs the pack lacks; INCLUDE_RE, or @FILE of test names one a line (a
# pass's leftovers: the names a previous call did not reach). SUITE_PASSES="shared nccl" (default).
set -uo pipefail
: "${build:?run through run-carried.sh exec}" "${out:?}" "${mpiexec:?}"
end=$((SECONDS + ${1:-540}))
ex=${2:-^$} inc=${3:-.}
ngpu=$(nvidia-smi -L | wc -l)
if [[ $inc == @* ]]; then inc="^($(tr '\n' '|' <"${inc#@}" | sed 's/|$//'))\$"; fi
run() {  # TAG INCLUDE EXCLUDE ENV...
  local tag=$1 i=$2 e=$3 left=$((end - SECONDS)) t0=$SECONDS
  shift 3
  if [[ $left -lt 30 ]]; then echo "[$tag] skipped: no time left" | tee -a "$out/suite.txt"; return; fi
  (cd "$build" && env "$@" timeout "$left" ctest --output-on-failure --timeout 240 -LE "^(package|soak)$" -j 4 \
     -R "$i" -E "$e" >"$out/ctest-$tag.log" 2>&1)
  local rc=$? done
  done=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$out/ctest-$tag.log")
  echo "[$tag] exit $rc in $((SECONDS - t0)) s, $done tests finished: $(grep -E 'tests passed' "$out/ctest-$tag.log" |
       tail -1); failed: $(grep -E '^ *[0-9]+/[0-9]+ Test +#.*\*\*\*' "$out/ctest-$tag.log" |
       sed -E 's/.*#[0-9]+: ([^ ]+) .*/\1/' | tr '\n' ' ')" | tee -a "$out/suite.txt"
}
passes=${SUITE_PASSES:-shared nccl}
if [[ " $passes " == *" shared "* ]]; then run shared "$inc" "$ex" SPMD_SHARE_GPUS=1; fi
if [[ " $passes " == *" nccl "* ]]; then
  # the selected tests at 1..ngpu ranks (one regex of their names: ctest takes one -R)
  names=$(cd "$build" && ctest -N -LE "^(package|soak)$" -R "$inc" -E "$ex|uncaught|consumer" |
          sed -nE "s/^ *Test +#[0-9]+: ([^ ]+_np[1-$ngpu])$/\1/p" | paste -sd '|')
  run "np1-${ngpu}_nccl" "^(${names:-none})\$" "$ex" SPMD_SHARE_GPUS=0 SPMD_BACKEND=nccl
fi
grep -h -B2 -A30 -E '\*\*\*Failed|\*\*\*Timeout|\*\*\*Not Run' "$out"/ctest-*.log | head -400 >"$out/failures.txt"
