#!/usr/bin/env bash
# The one-GPU measurements of issue 23 (docs/performance.md, "One GPU at the hardware limit") from
# the carried CUDA binaries, on a lent machine:
#
#   .carry/run-carried.sh exec scripts/gpu/compute.sh [STEPS...]
#
# (run-carried.sh exports build, src, mpiexec, out and the library path). STEPS (default all, in
# this order): triad stencil knobs reduce cg sparse apps cupy; also solvers (issue 26's
# methods and preconditioners), cgapps (the apps step's CG runs alone), cfd (the CFD app and
# CuPy's run of the NumPy program, with the copy bandwidth), gmres (GMRES(30) and BiCGStab on
# convdiff2d against cupyx's on the same matrix), fft (bench_fft and CuPy's cp.fft, one GPU),
# fftmulti (bench_fft at 1, 2, 4 ranks, one per GPU), spectral (apps/spectral, 1 and 2 GPUs), profiles (Nsight Compute of the kernels behind the
# targets not met: the CFD step, the in-place forms, the 3-D Laplacian, pipelined CG, the launch
# floor; SPMD_PROFILES picks some, SPMD_NCU_SECTIONS the sections) and tests (test
# programs at 1 and 2 ranks on GPU 0), named only. One rank, GPU 0. Each benchmark writes
# Google Benchmark JSON (3 repetitions, aggregates) and each app its --json report under $out; a
# step that would start after SPMD_COMPUTE_BUDGET seconds (default 480) is skipped and said so.
# The summary lines go to $out/compute.txt and stdout.
set -uo pipefail
: "${build:?run through run-carried.sh exec}" "${out:?}" "${src:?}"
budget=${SPMD_COMPUTE_BUDGET:-480}
steps=("$@")
((${#steps[@]})) || steps=(triad stencil knobs reduce cg sparse apps cupy)
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
R=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
t_start=$SECONDS
say() { printf '[spmd compute %s] %s\n' "$(date +%T)" "$*" | tee -a "$out/compute.txt" >&2; }
# run NAME CMD...: one program, its output in NAME.log; skipped past the budget.
run() {
  local name=$1 t0=$SECONDS rc=0
  shift
  if ((SECONDS - t_start > budget)); then
    say "$name: skipped (budget of $budget s spent)"
    return 0
  fi
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  say "$name: exit $rc in $((SECONDS - t0)) s"
}
bench() {  # bench NAME PROGRAM [ARGS...] (JSON to NAME.json)
  local name=$1 prog=$2
  shift 2
  run "$name" "$build/perf/$prog" "${R[@]}" --benchmark_out="$out/$name.json" "$@"
}
app() {  # app NAME PROGRAM [ARGS...] (its report to NAME.json; the rate lines echoed)
  local name=$1 prog=$2
  shift 2
  run "$name" "$build/apps/$prog" "$@" --json "$out/$name.json"
  say "$name: $(grep -m3 -E 'points/s|ms/iteration|point-steps' "$out/$name.log" | tr '\n' ' ')"
}
say "$(nvidia-smi -L | head -1); steps: ${steps[*]}"
for s in "${steps[@]}"; do
  case $s in
    triad) bench triad bench_triad --benchmark_filter='/n:(1000|16777216|134217728)/' ;;
    stencil)
      bench stencil bench_stencil \
        --benchmark_filter='BM_stencil(_fused_swap|_fused_inplace|3d_fused_swap|3d_kokkos_mdrange)/' ;;
    knobs)  # the forms the kernels replaced, in the same build
      SPMD_BENCH_COLUMN_MIN=1000000000 bench stencil_strided bench_stencil \
        --benchmark_filter='BM_stencil(_fused_swap|3d_fused_swap)/'
      bench stencil_tiled bench_stencil --benchmark_filter='BM_stencil_fused_inplace_tiled/' ;;
    reduce)
      bench reduce bench_reduce --benchmark_filter='BM_(sum|dot|norm2|norm2_expr|sum_view)/n:(1024|67108864)/|_2d' ;;
    cg)
      bench cg bench_cg --benchmark_filter='BM_(cg|pipelined_cg|cg_stencil)/dim:2/n:(1024|4096)/|BM_laplacian_apply' ;;
    sparse) bench sparse bench_sparse --benchmark_filter='BM_spmv/dim:(2/n:4096|3/n:256)/|BM_spmv_local' ;;
    apps)
      app app_stencil_fast stencil --n 16384 --steps 100 --fast
      app app_stencil_inplace stencil --n 16384 --steps 100
      app app_cfd cfd --nx 4096 --ny 4096 --steps 10 --nit 50
      ;&
    cgapps)  # (also part of apps) CG on the CSR matrix and matrix-free
      app app_cg_csr cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000
      app app_cg_mf cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000 --operator matrix-free ;;
    solvers)  # issue 26's methods and preconditioners on the GPU (CSR unless said)
      app app_mg_mf cg_solver --problem poisson2d --n 4096 --tol 1e-8 --operator matrix-free --precond mg
      app app_cheb_csr cg_solver --problem poisson2d --n 4096 --tol 1e-8 --precond chebyshev --max-iters 5000
      app app_bicgstab cg_solver --problem convdiff2d --peclet 100 --n 2048 --tol 1e-8 --method bicgstab --max-iters 5000
      app app_gmres cg_solver --problem convdiff2d --peclet 100 --n 2048 --tol 1e-8 --method gmres --max-iters 5000
      app app_gmres_ilu cg_solver --problem convdiff2d --peclet 100 --n 1024 --tol 1e-8 --method gmres --precond ilu \
        --max-iters 2000 ;;
    tests)  # test programs of the build, 1 and 2 ranks sharing GPU 0 (SPMD_TESTS, default test_sparse)
      for t in ${SPMD_TESTS:-test_sparse}; do
        [[ -x $build/tests/$t ]] || { say "$t: not in the carried build"; continue; }
        export GTEST_COLOR=no
        run "${t}_np1" "$mpiexec" -n 1 "$build/tests/$t"
        SPMD_SHARE_GPUS=1 run "${t}_np2" "$mpiexec" -n 2 -x SPMD_SHARE_GPUS "$build/tests/$t"
        say "$t: $(grep -h -E '^\[  (PASSED|FAILED) ' "$out/${t}_np1.log" "$out/${t}_np2.log" | tr '\n' ' ')"
      done ;;
    cfd)  # (named only) the CFD app against the NumPy program on CuPy, with the same run's copy
      app app_cfd cfd --nx 4096 --ny 4096 --steps 10 --nit 50
      app app_cfd_log_view cfd --nx 4096 --ny 4096 --steps 10 --nit 50 --spmd-log-view  # where a step goes
      run cupy_cfd python3 "$src/perf/peers/cupy_peers.py" --only copy,cfd --repeat 3 --json "$out/cupy_cfd.json" ;;
    fft)  # (named only) issue 27: 3-D FFTs against cuFFT called directly and CuPy's cp.fft (one GPU)
      bench fft bench_fft --benchmark_filter='/side:(256|512)/'
      SPMD_SHARE_GPUS=1 run fft_numpy python3 "$src/tests/fft_numpy.py" "$mpiexec" "$build/tests/fft_driver" \
        "$out/fft-numpy" 1,2 --table "--preflags=-x SPMD_SHARE_GPUS"
      say "fft_numpy: $(tail -1 "$out/fft_numpy.log")"
      run cupy_fft python3 "$src/perf/peers/cupy_peers.py" --only copy,fft --repeat 5 --json "$out/cupy_fft.json" ;;
    fftmulti)  # (named only) issue 27: bench_fft on every GPU of the machine (one rank per GPU)
      ngpu=$(nvidia-smi -L | wc -l)
      for np in 1 2 4; do
        ((np <= ngpu)) || continue
        CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((ngpu - 1))) run "fft_np$np" "$mpiexec" -n $np "$build/perf/bench_fft" "${R[@]}" \
          --benchmark_out="$out/fft_np$np.json" --benchmark_filter='BM_(fftn_plan|fftn_transposed|fftn_weak|rfftn_plan)/side:(256|512)/'
      done ;;
    spectral)  # (named only) issue 27: apps/spectral (random field) on one GPU and, when there, two
      ngpu=$(nvidia-smi -L | wc -l)
      for n in 2048 4096; do
        for e in estimate measure; do
          app app_spectral_${n}_$e spectral --n $n --steps 50 --init random --kmax 32 --nu 1e-4 --monitor 0 --fft-effort $e
          say "app_spectral_${n}_$e: $(grep -m1 'point-updates' "$out/app_spectral_${n}_$e.log")"
        done
        if ((ngpu >= 2)); then
          CUDA_VISIBLE_DEVICES=0,1 run app_spectral_${n}_np2 "$mpiexec" -n 2 "$build/apps/spectral" --n $n --steps 50 \
            --init random --kmax 32 --nu 1e-4 --monitor 0 --json "$out/app_spectral_${n}_np2.json"
          say "app_spectral_${n}_np2: $(grep -m1 'point-updates' "$out/app_spectral_${n}_np2.log")"
        fi
      done ;;
    gmres)  # (named only) issue 26: ms per iteration against cupyx on the same convdiff2d matrix
      for n in 1024 2048; do
        app app_gmres_$n cg_solver --problem convdiff2d --peclet 100 --n $n --tol 1e-30 --method gmres \
          --gmres-restart 30 --max-iters 600
        app app_bicgstab_$n cg_solver --problem convdiff2d --peclet 100 --n $n --tol 1e-30 --method bicgstab \
          --max-iters 600
      done
      run cupy_gmres python3 "$src/perf/peers/cupy_peers.py" --only copy,gmres --repeat 5 --json "$out/cupy_gmres.json" ;;
    profiles)  # (named only) issue 23: what bounds the targets not met (details pages as text).
      # Under ncu every launch is serialised and slow (a 1 ms CG iteration takes 200 ms), so the
      # benchmarks run few iterations: keep the skips small.
      ncu_sections=(${SPMD_NCU_SECTIONS:---section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis})
      prof() {  # prof NAME KERNEL_REGEX SKIP COUNT PROGRAM [ARGS...]
        local name=$1 kre=$2 skip=$3 count=$4
        shift 4
        run "ncu_$name" ncu --clock-control none --kernel-name-base demangled -k "regex:$kre" \
          --launch-skip "$skip" --launch-count "$count" "${ncu_sections[@]}" -f -o "$out/ncu_$name" "$@"
        ncu --import "$out/ncu_$name.ncu-rep" --page details >"$out/ncu_$name.txt" 2>&1 || true
        rm -f "$out/ncu_$name.ncu-rep"
        say "ncu_$name: $(grep -c 'Section: GPU Speed Of Light' "$out/ncu_$name.txt") kernels profiled"
      }
      # SPMD_PROFILES chooses which (default all, in this order)
      for pr in ${SPMD_PROFILES:-cfd inplace inplace_tiled laplace3d pipelined floor}; do
        case $pr in
          cfd)  # one whole CFD step after the first: every kernel of the pressure sweeps
            prof cfd '.' 400 60 "$build/apps/cfd" --nx 4096 --ny 4096 --steps 3 --nit 50 ;;
          inplace)  # the in-place 5-point update at 16384^2 (buffered default: update + copy back)
            prof inplace 'ForItems|Copy' 4 10 "$build/perf/bench_stencil" \
              --benchmark_filter='BM_stencil_fused_inplace/grid:16384' --benchmark_min_time=1 ;;
          inplace_tiled)  # the one-pass tiled form (its two kernels)
            prof inplace_tiled 'TiledAssign' 0 10 "$build/perf/bench_stencil" \
              --benchmark_filter='BM_stencil_fused_inplace_tiled/grid:16384' --benchmark_min_time=1 ;;
          laplace3d)  # the 3-D Laplacian apply at 256^3 (0.60 of the copy on the H200)
            prof laplace3d 'Laplace|ForItems' 2 8 "$build/perf/bench_cg" \
              --benchmark_filter='BM_laplacian_apply/dim:3/n:256/exchange:0' --benchmark_min_time=1 ;;
          pipelined)  # pipelined CG at 4096^2: every kernel of a few iterations
            prof pipelined '.' 30 16 "$build/perf/bench_cg" \
              --benchmark_filter='BM_pipelined_cg/dim:2/n:4096/' --benchmark_min_time=1 ;;
          floor)  # the latency floor of this machine without Kokkos (perf/peers/launch_floor.cu, built here)
            if nvcc -O2 -std=c++17 -arch=sm_90 "$src/perf/peers/launch_floor.cu" -o "$out/launch_floor" \
                 >"$out/launch_floor_build.log" 2>&1; then
              run launch_floor "$out/launch_floor" 2000
              run launch_floor_spin "$out/launch_floor" 2000 --spin
              say "launch floor: $(cat "$out/launch_floor.log") $(cat "$out/launch_floor_spin.log")"
              rm -f "$out/launch_floor"
            else
              say "launch_floor: nvcc failed ($(tail -1 "$out/launch_floor_build.log"))"
            fi ;;
          *) say "unknown profile '$pr'" ;;
        esac
      done
      ;;
    cupy) run cupy python3 "$src/perf/peers/cupy_peers.py" --repeat 5 --json "$out/cupy.json" ;;
    *) say "unknown step '$s'" ;;
  esac
done
say "done in $((SECONDS - t_start)) s"
