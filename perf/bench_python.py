"""The Python front's fused assignment against the C++ fused kernel (issue 28's ratio).

    PYTHONPATH=build/python OMP_NUM_THREADS=1 mpiexec.mpich -n 1 <venv>/bin/python perf/bench_python.py [n] [reps]

Times out[...] = 0.2 * (a + b + c + d + e) (float64, 1-D, n elements per rank, memory-bound: 48
bytes a point) from Python (one program of the fused interpreter, plus the Python layer's
compile of the tree) and the same statement in C++ (spmd::assign of the C++ expression, through
the same engine, same arrays, same process), interleaved repetition by repetition so both see
the same machine. Prints the medians, the bandwidth of each and the ratio C++ time / Python
time (>= 0.8 is issue 28's target). Also the host overhead of the statement on a 64-point
array (with a compiled program cached, and compiled every time), with its breakdown.
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
    o, s1, s2, s3, s4, s5 = small
    m = 2000

    def per(f):  # seconds a call of f, the best of 5 runs of m calls
        best = 1e9
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(m):
                f()
            best = min(best, (time.perf_counter() - t0) / m)
        return best

    def statement():
        o[...] = 0.2 * (s1 + s2 + s3 + s4 + s5)

    def tree():
        return 0.2 * (s1 + s2 + s3 + s4 + s5)

    statement()  # compiled once, then cached
    t_tree = tree()
    overhead = per(statement)
    t_build = per(tree)
    t_key = per(lambda: sa._PROGRAMS.get((sa._expr.signature(t_tree)[0], o._h.dtype, o._h.ndim, o.shape)))
    key, arrays, scalars = sa._expr.signature(t_tree)
    ent = sa._PROGRAMS[(key, o._h.dtype, o._h.ndim, o.shape)]
    c, code, result, osrc, ksrc = ent
    ops = [arrays[k]._h for k in osrc]
    dt = sa._expr.DTYPES[c]
    t_call = per(lambda: sa._core.assign(o._h, dt, code, [0.2], [], result, ops))
    sa._PROGRAMS.clear()
    t_uncached = per(lambda: (statement(), sa._PROGRAMS.clear()))
    tc_small = np.median(sa._core.bench_cpp_fused5([s._h for s in small], 200))
    if comm.rank == 0:
        print(f"ranks {comm.size}, {n} points a rank, {reps} repetitions, {sa._core.execution_space()}")
        print(f"python  out[...] = 0.2*(a+b+c+d+e): median {tp * 1e3:8.3f} ms  {gb / tp:6.2f} GB/s a rank")
        print(f"c++     spmd::assign(out, 0.2*(a+b+c+d+e)): median {tc * 1e3:8.3f} ms  {gb / tc:6.2f} GB/s a rank")
        print(f"ratio (C++ time / Python time): {tc / tp:.3f}")
        print(f"64-point assignment: python {overhead * 1e6:.1f} us a statement (compiled each time: "
              f"{t_uncached * 1e6:.1f} us), C++ {tc_small * 1e6:.1f} us")
        print(f"  of which: building the tree {t_build * 1e6:.1f} us, key + cache look-up "
              f"{t_key * 1e6:.1f} us, the C++ call (_core.assign: arguments, engine, kernel, fence) "
              f"{t_call * 1e6:.1f} us, the rest (constants, halo flags, Python glue) "
              f"{(overhead - t_build - t_key - t_call) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
