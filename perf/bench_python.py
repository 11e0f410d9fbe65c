"""The Python front against the C++ calls it makes, and against CuPy on a GPU (issue 28's tables).

    PYTHONPATH=build/python OMP_NUM_THREADS=1 mpiexec.mpich -n 1 <venv>/bin/python perf/bench_python.py \
        [--n POINTS] [--reps R] [--small POINTS] [--json FILE] [--no-peer]

Bandwidth: out[...] = 0.2 * (a + b + c + d + e) (float64, 1-D, --n points a rank, memory-bound: 48
bytes a point) from Python (one program of the fused interpreter, plus the Python layer's work on
the tree) and the same statement in C++ (spmd::assign of the C++ expression, through the same
engine, same arrays, same process), interleaved repetition by repetition so both see the same
machine: the medians, the bandwidth of each and the ratio C++ time / Python time (>= 0.8 is issue
28's target).

Overheads (host-timed, medians of 9 batches, microseconds a call, --small points, default 64 on a
host build and 1000 on a device build as CuPy's latency figures; statements timed with
spmdarray.synchronize() after them, as CuPy's with the device's): a lazy node (s1 + s2), the fused
5-operand assignment (with its program cached, compiled every time, and not waited for) with its
breakdown, o += 0.5 * s1, float(spmdarray.dot(x, x)), float(spmdarray.sum(x * y)), and the C++
fused assignment (fenced) and spmd::dot to the host on the same small arrays; the CFD example's
boundary copies (a wall row, a periodic column) and a whole-array copy Q[...] = P on 2-D arrays of
about as many points a rank. Also out[...] = a over the large arrays (GB/s, 16 bytes a point).

Peer (a device build with CuPy importable, unless --no-peer): the same statements on CuPy in the
same process: a hand-fused ElementwiseKernel over the large arrays (device time), and host-timed
the NumPy-style statement, the hand-fused one, float(cp.dot(x, x)) and float(cp.sum(x * y)).

Prints a table on rank 0; --json FILE writes every figure (rank 0).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import spmdarray as sa


def batches(f, m, k=9):
    """Median seconds a call of f over k batches of m calls."""
    f()
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        for _ in range(m):
            f()
        out.append((time.perf_counter() - t0) / m)
    return statistics.median(out)


def peer(n, small, reps):
    """CuPy on the same GPU, in this process."""
    import cupy as cp

    res = {}
    a, b, c, d, e = (cp.full(n, 1.0 + k) for k in range(5))
    out = cp.zeros(n)
    fused = cp.ElementwiseKernel("T a, T b, T c, T d, T e", "T o", "o = 0.2 * (a + b + c + d + e)", "peer_fused5")
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for r in range(reps + 2):
        start.record()
        fused(a, b, c, d, e, out)
        stop.record()
        stop.synchronize()
        if r >= 2:
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    res["cupy_fused5_large_s"] = statistics.median(times)
    del a, b, c, d, e, out
    cp.get_default_memory_pool().free_all_blocks()
    o, s1, s2, s3, s4, s5 = (cp.full(small, 1.0 + k) for k in range(6))
    sync = cp.cuda.Device().synchronize

    def numpy_style():
        o[...] = 0.2 * (s1 + s2 + s3 + s4 + s5)
        sync()

    def hand_fused():
        fused(s1, s2, s3, s4, s5, o)
        sync()

    res["cupy_statement_us"] = batches(numpy_style, 500) * 1e6
    res["cupy_fused_statement_us"] = batches(hand_fused, 500) * 1e6
    res["cupy_iadd_us"] = batches(lambda: (o.__iadd__(0.5 * s1), sync()), 500) * 1e6
    res["cupy_dot_to_host_us"] = batches(lambda: float(cp.dot(s1, s2)), 500) * 1e6
    res["cupy_sum_product_to_host_us"] = batches(lambda: float(cp.sum(s1 * s2)), 500) * 1e6
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=None, help="points a rank (default 4e6 host, 2^26 device)")
    p.add_argument("--reps", type=int, default=21)
    p.add_argument("--small", type=int, default=None, help="points of the overhead arrays (64 host, 1000 device)")
    p.add_argument("--json")
    p.add_argument("--no-peer", action="store_true")
    p.add_argument("legacy", nargs="*", type=int, help=argparse.SUPPRESS)  # n [reps], the old form
    args = p.parse_args()
    dev = sa.device_memory
    n = args.n or (args.legacy[0] if args.legacy else (1 << 26 if dev else 4_000_000))
    reps = args.legacy[1] if len(args.legacy) > 1 else args.reps
    small_n = args.small or (1000 if dev else 64)
    comm = sa.Comm()
    shape = (n * comm.size,)
    a, b, c, d, e = (sa.full(shape, 1.0 + k) for k in range(5))
    out = sa.zeros(shape)
    expr_time, cpp_time = [], []
    for _ in range(reps + 2):
        comm.barrier()
        t0 = time.perf_counter()
        out[...] = 0.2 * (a + b + c + d + e)
        sa.synchronize()  # a GPU's kernel runs after the call returns
        expr_time.append(time.perf_counter() - t0)
        cpp_time += sa._core.bench_cpp_fused5([out._h, a._h, b._h, c._h, d._h, e._h], 1)
    expr_time, cpp_time = expr_time[2:], cpp_time[2:]
    assert np.allclose(out[::max(1, n // 7)].gather(), 3.0)
    copy_time = []  # out[...] = a: whole arrays of one distribution (the storage copied)
    for _ in range(reps + 2):
        comm.barrier()
        t0 = time.perf_counter()
        out[...] = a
        sa.synchronize()
        copy_time.append(time.perf_counter() - t0)
    copy_time = copy_time[2:]
    assert np.allclose(out[::max(1, n // 7)].gather(), 1.0)
    del a, b, c, d, e, out
    tp, tc = statistics.median(expr_time), statistics.median(cpp_time)
    gb = 48.0 * n / 1e9
    small = [sa.full((small_n * comm.size,), 1.0 + k) for k in range(6)]
    o, s1, s2, s3, s4, s5 = small
    m = 2000 if not dev else 500

    sync = sa.synchronize

    def statement():  # host-timed with its kernel's completion, as CuPy's figures below
        o[...] = 0.2 * (s1 + s2 + s3 + s4 + s5)
        sync()

    def queued():  # the call alone: on a GPU its kernel may still run when it returns
        o[...] = 0.2 * (s1 + s2 + s3 + s4 + s5)

    def tree():
        return 0.2 * (s1 + s2 + s3 + s4 + s5)

    def iadd():
        nonlocal o
        o += 0.5 * s1
        sync()

    statement()  # compiled once, then cached
    r = {"ranks": comm.size, "points_a_rank": n, "repetitions": reps, "small_points_a_rank": small_n,
         "execution_space": sa._core.execution_space(), "python_fused5_s": tp, "cpp_fused5_s": tc,
         "python_fused5_gbs": gb / tp, "cpp_fused5_gbs": gb / tc, "ratio_cpp_over_python": tc / tp,
         "python_copy_s": statistics.median(copy_time), "python_copy_gbs": 16.0 * n / 1e9 / statistics.median(copy_time)}
    # first the statements as a program runs them (no expression held: the write barrier's fast test)
    r["node_us"] = batches(lambda: s1 + s2, m) * 1e6
    r["statement_us"] = batches(statement, m) * 1e6
    r["statement_queued_us"] = batches(queued, m) * 1e6
    r["iadd_us"] = batches(iadd, m) * 1e6
    r["dot_to_host_us"] = batches(lambda: float(sa.dot(s1, s2)), m) * 1e6
    r["sum_product_to_host_us"] = batches(lambda: float(sa.sum(s1 * s2)), m) * 1e6
    r["synchronize_us"] = batches(sync, m) * 1e6
    r["cpp_statement_us"] = statistics.median(sa._core.bench_cpp_fused5([s._h for s in small], 200)) * 1e6
    r["cpp_dot_to_host_us"] = statistics.median(sa._core.bench_cpp_dot(s1._h, s2._h, 500)) * 1e6
    # the CFD example's boundary copies (a wall row, a periodic column) and a whole-array copy, on
    # 2-D arrays of about the same points a rank (rows split across ranks)
    side = max(2, int(round(small_n ** 0.5)))
    P, Q = sa.full((side * comm.size, side), 1.0), sa.zeros((side * comm.size, side))

    def wall():
        P[-1, :] = P[-2, :]
        sync()

    def column():
        P[:, 0] = P[:, -2]
        sync()

    def whole():
        Q[...] = P
        sync()

    r["wall_copy_us"] = batches(wall, m) * 1e6
    r["column_copy_us"] = batches(column, m) * 1e6
    r["whole_copy_us"] = batches(whole, m) * 1e6
    r["statement_uncached_us"] = batches(lambda: (statement(), sa._PROGRAMS.clear()), m // 4) * 1e6
    statement()
    # then the parts, on a tree held here
    r["tree_us"] = batches(tree, m) * 1e6
    t_tree = tree()
    r["key_lookup_us"] = batches(lambda: sa._lookup(o, t_tree), m) * 1e6
    _, ent, arrays, scalars = sa._lookup(o, t_tree)
    ops, kf, ki = sa._bind_cached(ent, arrays, scalars)
    r["core_assign_us"] = batches(lambda: (sa._core.assign(o._h, ent[6], ent[1], kf, ki, ent[2], ops), sync()),
                                  m) * 1e6
    del t_tree
    if dev and not args.no_peer:
        try:
            r.update(peer(n, small_n, reps))
        except ImportError:
            pass
    if comm.rank == 0:
        print(f"ranks {comm.size}, {n} points a rank, {reps} repetitions, {r['execution_space']}")
        print(f"python  out[...] = 0.2*(a+b+c+d+e): median {tp * 1e3:8.3f} ms  {gb / tp:7.2f} GB/s a rank")
        print(f"c++     spmd::assign(out, 0.2*(a+b+c+d+e)): median {tc * 1e3:8.3f} ms  {gb / tc:7.2f} GB/s a rank")
        if "cupy_fused5_large_s" in r:
            t = r["cupy_fused5_large_s"]
            print(f"cupy    ElementwiseKernel (device time): median {t * 1e3:8.3f} ms  {gb / t:7.2f} GB/s")
        print(f"ratio (C++ time / Python time): {tc / tp:.3f}")
        print(f"python  out[...] = a: median {r['python_copy_s'] * 1e3:8.3f} ms  {r['python_copy_gbs']:7.2f} GB/s a rank")
        print(f"{small_n}-point arrays, us a call (host-timed medians):")
        rows = [("lazy node s1 + s2", "node_us", None),
                ("o[...] = 0.2*(s1+...+s5)", "statement_us", "cupy_statement_us"),
                ("  same, compiled every time", "statement_uncached_us", "cupy_fused_statement_us"),
                ("  same, not waiting for the kernel", "statement_queued_us", None),
                ("  of which: building the tree", "tree_us", None),
                ("  key + cache look-up", "key_lookup_us", None),
                ("  _core.assign + synchronize", "core_assign_us", None),
                ("  C++ spmd::assign of the same (fenced)", "cpp_statement_us", None),
                ("  spmdarray.synchronize() alone", "synchronize_us", None),
                ("o += 0.5*s1", "iadd_us", "cupy_iadd_us"),
                ("float(dot(x, y))", "dot_to_host_us", "cupy_dot_to_host_us"),
                ("  C++ spmd::dot(x, y)", "cpp_dot_to_host_us", None),
                ("float(sum(x * y))", "sum_product_to_host_us", "cupy_sum_product_to_host_us"),
                (f"CFD wall P[-1, :] = P[-2, :] ({side}^2 a rank)", "wall_copy_us", None),
                ("CFD column P[:, 0] = P[:, -2]", "column_copy_us", None),
                ("whole Q[...] = P", "whole_copy_us", None)]
        for label, k, pk in rows:
            tail = f"   cupy {r[pk]:7.1f}" if pk in r else ""
            print(f"  {label:40s} {r[k]:7.1f}{tail}")
        if "cupy_fused_statement_us" in r:
            print("  (cupy column: NumPy-style statement; on the uncached row the hand-fused ElementwiseKernel)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
