"""The Python front's fused assignment against the C++ fused kernel (issue 28's ratio).

    PYTHONPATH=build/python OMP_NUM_THREADS=1 mpiexec.mpich -n 1 <venv>/bin/python perf/bench_python.py [n] [reps]

Times out[...] = 0.2 * (a + b + c + d + e) (float64, 1-D, n elements per rank, memory-bound: 48
bytes a point) from Python (one program of the fused interpreter, plus the Python layer's
compile of the tree) and the same statement in C++ (spmd::assign of the C++ expression, through
the same engine, same arrays, same process), interleaved repetition by repetition so both see
the same machine. Prints the medians, the bandwidth of each and the ratio C++ time / Python
time (>= 0.8 is issue 28's target). Also the Python-side overhead on a tiny array.
"""
import sys
import time

import numpy as np

import spmdarray as sa


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4_000_000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    comm = sa.Comm()
    shape = (n * comm.size,)
    a, b, c, d, e = (sa.full(shape, 1.0 + k) for k in range(5))
    out = sa.zeros(shape)
    expr_time, cpp_time = [], []
    for _ in range(reps):
        comm.barrier()
        t0 = time.perf_counter()
        out[...] = 0.2 * (a + b + c + d + e)
        expr_time.append(time.perf_counter() - t0)  # assign returns after the kernel (fenced)
        cpp_time += sa._core.bench_cpp_fused5([out._h, a._h, b._h, c._h, d._h, e._h], 1)
    assert np.allclose(out[::max(1, n // 7)].gather(), 3.0)
    tp, tc = np.median(expr_time), np.median(cpp_time)
    gb = 48.0 * n / 1e9
    small = [sa.full((64,), 1.0 + k) for k in range(6)]
    t0 = time.perf_counter()
    m = 2000
    for _ in range(m):
        small[0][...] = 0.2 * (small[1] + small[2] + small[3] + small[4] + small[5])
    overhead = (time.perf_counter() - t0) / m
    tc_small = np.median(sa._core.bench_cpp_fused5([s._h for s in small], 200))
    if comm.rank == 0:
        print(f"ranks {comm.size}, {n} points a rank, {reps} repetitions, {sa._core.execution_space()}")
        print(f"python  out[...] = 0.2*(a+b+c+d+e): median {tp * 1e3:8.3f} ms  {gb / tp:6.2f} GB/s a rank")
        print(f"c++     spmd::assign(out, 0.2*(a+b+c+d+e)): median {tc * 1e3:8.3f} ms  {gb / tc:6.2f} GB/s a rank")
        print(f"ratio (C++ time / Python time): {tc / tp:.3f}")
        print(f"64-point assignment: python {overhead * 1e6:.1f} us a statement, C++ {tc_small * 1e6:.1f} us")


if __name__ == "__main__":
    main()
