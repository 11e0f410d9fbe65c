#!/usr/bin/env bash
# On a lent GPU machine: run the CUDA binaries that scripts/gpu/device-build.sh built on the CPU
# machine and packed into .carry/spmd-dev.tar.xz (with this script and gpu-lib.sh beside it).
# Nothing is compiled here.
#   .carry/run-carried.sh test [CTEST_ARGS...]   the whole ctest suite but the package tests
#                                                (default CTEST_ARGS -LE package; 1 GPU: ranks share it;
#                                                several: also one rank per GPU with each backend
#                                                forced), the random identity, the binding check
#   .carry/run-carried.sh bench                  the benchmarks, the apps at GPU sizes and the CuPy
#                                                peers in the same run (SPMD_GPU_BENCHES, SPMD_GPU_REPS)
#   .carry/run-carried.sh profile KERNEL_REGEX PROGRAM [ARGS...]
#                                                Nsight Compute (--clock-control none, SpeedOfLight)
#                                                on the kernels whose names match, of PROGRAM (a path
#                                                in the build: apps/stencil, perf/bench_stencil);
#                                                the regex is matched against demangled names, so a
#                                                Kokkos kernel is found by its functor's type
#                                                (SPMD_NCU_SKIP launches skipped, default 5;
#                                                SPMD_NCU_COUNT profiled, default 3)
#   .carry/run-carried.sh all                    test, then bench
#   .carry/run-carried.sh exec SCRIPT [ARGS]     a script run with the carried binaries' environment
#                                                (build, src, mpiexec, out exported; scripts/gpu/compute.sh)
#   .carry/run-carried.sh check                  no GPU needed: unpack, resolve the libraries, list
#                                                the tests, run those without Kokkos (label fuzz)
# Logs and JSON go under $OUT (default ./gpu-out), packed (at most 8 files come back); a summary
# table is printed last. Run from anywhere: it finds the pack beside itself.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=${1:-test}
shift || true
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
dev=/tmp/spmd-dev   # the fixed root the binaries were built under (device-build.sh)
src=$dev/src build=$dev/build mpiexec=$dev/bin/mpiexec
source "$here/gpu-lib.sh"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} OMP_PROC_BIND=false
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink multicast stays off (the lent machines' rule; NCCL would otherwise try it).
export NCCL_NVLS_ENABLE=0
t_all=$SECONDS

# -- unpack and recreate the fixed tree -------------------------------------------------------------
t0=$SECONDS
pack="$here/spmd-dev.tar.xz"
[[ -f $pack ]] || { echo "run-carried: no $pack (scripts/gpu/device-build.sh makes it)" >&2; exit 1; }
rm -rf "$dev" && mkdir -p /tmp && tar -C / -xJf "$pack" || { echo "run-carried: cannot unpack $pack" >&2; exit 1; }
py=$(command -v python3)
launcher=$(command -v mpiexec || command -v mpirun)
gpu_write_bin "$dev" "$launcher" "$py"
# ctest's files name this machine's cmake where the build machine's was (/usr/bin/cmake).
cm=$(command -v cmake || true)
if [[ ! -x /usr/bin/cmake && -n $cm ]]; then
  find "$build" -name CTestTestfile.cmake -exec sed -i "s#\"/usr/bin/cmake\"#\"$cm\"#g" {} +
fi
gpu_log "$(head -1 "$dev/BUILD-INFO"); unpacked in $((SECONDS - t0)) s"
gpu_log "$(nvidia-smi -L | head -1), $ngpu GPU(s), $(nproc) cores; $("$launcher" --version 2>&1 | head -1);" \
  "python3 $py ($("$py" -c 'import numpy; print("numpy", numpy.__version__)' 2>&1))"

# -- shared libraries: ours, then the carried ones the image lacks -----------------------------------
# The CUDA libraries outside the loader's cache (a toolkit under /usr/local/cuda, or the Python
# wheels' copies) are looked for where they usually are.
lib_path="$dev/lib:$dev/kokkos/lib:$build"
mkdir -p "$dev/lib-missing"
known=$(ldconfig -p)  # (not piped into grep -q: with pipefail, an early match would read as a failure)
for f in "$dev"/lib-fallback/*; do
  [[ -e $f ]] || continue
  n=$(basename "$f")
  grep -q "^\s*$n " <<<"$known" || ln -sf "$f" "$dev/lib-missing/$n"
done
lib_path+=":$dev/lib-missing"
for need in libcudart.so.13 libcublas.so.13 libcusparse.so.12 libnccl.so.2; do
  grep -q "^\s*$need " <<<"$known" && continue
  d=$(find /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu \
        /opt /usr/local/lib -name "$need" -print -quit 2>/dev/null)
  [[ -n $d ]] && lib_path+=":$(dirname "$d")"
done
export LD_LIBRARY_PATH="$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gpu_log "carried libraries used: $(ls "$dev/lib" | tr '\n' ' ')$(ls "$dev/lib-missing" | tr '\n' ' ')"
missing=$(find "$build" -type f -perm -u+x -not -path '*/CMakeFiles/*' -exec sh -c \
            'head -c4 "$1" | grep -q ELF && ldd "$1" | grep "not found" | sed "s|^|$1: |"' _ {} \; | sort -u)
if [[ -n $missing ]]; then
  gpu_log "MISSING shared libraries:"
  echo "$missing" | tee -a "$out/summary.txt" >&2
  gpu_row "shared libraries" "MISSING: $(echo "$missing" | awk '{print $2}' | sort -u | tr '\n' ' ')" 0
else
  gpu_row "unpack + shared libraries" "ok" $((SECONDS - t0))
fi

# The package tests (label package: install, an out-of-tree consumer configured against the
# install, the Spack recipe and release checks) test the packaging on the build machine, whose
# compilers, MPI and HDF5 development files and git checkout they need; CI runs them there.
[[ $# -eq 0 ]] && set -- -LE package
case $mode in
  test) gpu_tests "$@" ;;
  bench) gpu_bench ;;
  all) gpu_tests "$@"; gpu_bench ;;
  profile)
    kre=${1:?profile needs KERNEL_REGEX PROGRAM [ARGS...]} prog=${2:?profile needs PROGRAM}
    shift 2
    t0=$SECONDS
    ncu --clock-control none --section SpeedOfLight --kernel-name-base "${SPMD_NCU_NAME_BASE:-demangled}" -k "regex:$kre" --launch-skip "${SPMD_NCU_SKIP:-5}" \
      --launch-count "${SPMD_NCU_COUNT:-3}" -f -o "$out/profile" "$build/$prog" "$@" >"$out/profile-run.log" 2>&1
    rc=$?
    ncu --import "$out/profile.ncu-rep" --page details >"$out/profile.txt" 2>&1 || true
    gpu_log "profile of $kre in $prog: exit $rc; $(grep -c 'Section: GPU Speed Of Light' "$out/profile.txt") kernels"
    grep -E '^\s+(spmd|Kokkos|[A-Za-z_:<>]+)\S* \(|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Duration' \
      "$out/profile.txt" | head -60 >&2
    gpu_row "ncu $kre ($prog)" "exit $rc" $((SECONDS - t0)) ;;
  exec)  # exec SCRIPT [ARGS...]: a bash script of the repository run in this environment (the
         # carried libraries on LD_LIBRARY_PATH; build, src, mpiexec, out exported), e.g. compute.sh
    script=$1
    [[ -f $script ]] || { echo "run-carried: exec needs a script, not '$script'" >&2; exit 2; }
    shift
    t0=$SECONDS
    build=$build src=$src mpiexec=$mpiexec out=$out bash "$script" "$@"
    gpu_row "exec $(basename "$script")" "exit $?" $((SECONDS - t0)) ;;
  check)  # no GPU needed: the test list resolves, and the tests without Kokkos run
    gpu_row "ctest -N" "$(cd "$build" && ctest -N "$@" | tail -1)" 0
    gpu_ctest fuzz -- -L fuzz ;;
  *) echo "run-carried: mode must be test, bench, all, profile, exec or check" >&2; exit 2 ;;
esac
gpu_row "total" "" $((SECONDS - t_all))
gpu_pack
gpu_summary
