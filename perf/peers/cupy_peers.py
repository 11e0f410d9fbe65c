#!/usr/bin/env python3
"""The CuPy peers of the one-GPU benchmarks (docs/performance.md, GPU section): what a CuPy user
gets on the same GPU, written as a CuPy user would, timed in the same run as spmdarray's
benchmarks so that ratios are read from one run.

Measures (each the median of --repeat timed runs; device time between CUDA events unless noted):
  copy      a[...] = b over 2^27 doubles: the device-to-device bandwidth (16 B per element)
  stencil   cuNumeric's stencil (examples/stencil.py) on an (n+2)^2 grid, three ways:
              numpy      the NumPy program on CuPy: one kernel and one temporary per operator
              fused      one hand-fused ElementwiseKernel into a second grid, then swap
                         (the double buffer; 16 B per interior point)
              inplace    NumPy semantics in place: the fused kernel into a temporary, then
                         center[...] = temporary (the copy back)
  stencil3d the 3-D 7-point update hand-fused into a second grid, then swap
  reduce    sums to a device scalar at 2^26 doubles (bench_reduce's sizes): x.sum(), cp.dot(x, y),
            cp.linalg.norm(x), cp.linalg.norm(x - y), and over an 8192^2 grid u.sum() and its
            interior view u[1:-1, 1:-1].sum(); GB/s counts each input read once
  cfd       CFD Python step 12 (perf/peers/numpy_cfd.py) run on CuPy: grid-point-steps per second
  cg        cupyx.scipy.sparse.linalg.cg on the 2-D 5-point Poisson CSR matrix: ms per iteration,
            from the difference of two iteration counts (the set-up cancels)
  gmres     cupyx.scipy.sparse.linalg.gmres(restart=30) on cg_solver's convdiff2d matrix (Peclet
            100, assembled row for row as spmd::sparse::convection_diffusion2d; perf/peers/
            petsc_common.py's rule): ms per inner iteration from two run lengths, the inner
            iterations counted by the restart callback (CuPy counts maxiter in inner iterations)
  latency   host-timed (perf_counter around call + synchronize): float(cp.dot(x, x)),
            float(x.sum()), float(cp.linalg.norm(x)), a fused elementwise assignment over 1000
            elements, one hand-fused stencil iteration at 1024^2

usage: cupy_peers.py [--only copy,stencil,...] [--sizes 4096,8192,16384] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

import cupy as cp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def device_time(fn, reps, warm=2):
    """Median seconds of fn() over reps runs, timed with CUDA events on the current stream."""
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(times)


def host_time(fn, reps, warm=20):
    """Median seconds of fn() + synchronize, timed on the host (what a user waits)."""
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth(reps):
    n = 1 << 27
    a, b = cp.empty(n), cp.ones(n)

    def run():
        a[...] = b

    t = device_time(run, reps)
    return {"n": n, "seconds": t, "GB/s": 16.0 * n / t * 1e-9}


def stencil_grid(n):
    g = cp.zeros((n + 2, n + 2))
    g[:, 0] = -273.15
    g[:, -1] = -273.15
    g[-1, :] = -273.15
    g[0, :] = 40.0
    return g


FUSED5 = cp.ElementwiseKernel("T c, T n, T e, T w, T s", "T out", "out = 0.2 * (c + n + e + w + s)",
                              "peer_stencil5")
FUSED7 = cp.ElementwiseKernel("T c, T xl, T xh, T yl, T yh, T zl, T zh, T w", "T out",
                              "out = w * (c + xl + xh + yl + yh + zl + zh)", "peer_stencil7")


def views(g):
    return g[1:-1, 1:-1], g[0:-2, 1:-1], g[1:-1, 2:], g[1:-1, 0:-2], g[2:, 1:-1]


def stencil(n, reps, iters=10):
    """Interior points per second of the three forms at an (n+2)^2 grid (n interior points per axis)."""
    out = {"n": n + 2, "interior_points": n * n}

    g = stencil_grid(n)
    c, no, e, w, s = views(g)

    def numpy_form():  # cuNumeric's program, unchanged
        for _ in range(iters):
            average = c + no + e + w + s
            work = 0.2 * average
            c[...] = work

    out["numpy"] = n * n * iters / device_time(numpy_form, reps, 1)

    state = {"a": stencil_grid(n), "b": stencil_grid(n)}

    def fused_form():
        for _ in range(iters):
            a, b = state["a"], state["b"]
            FUSED5(*views(a), b[1:-1, 1:-1])
            state["a"], state["b"] = b, a

    out["fused"] = n * n * iters / device_time(fused_form, reps, 1)

    g2 = stencil_grid(n)
    v2 = views(g2)

    def inplace_form():
        for _ in range(iters):
            tmp = FUSED5(*v2)
            v2[0][...] = tmp

    out["inplace"] = n * n * iters / device_time(inplace_form, reps, 1)
    for k in ("numpy", "fused", "inplace"):
        out[k + "_GB/s"] = out[k] * 16e-9
    # The check value of apps/stencil for the in-place form is the grid's sum; kept for sanity.
    out["check_inplace"] = float(g2.sum())
    del g, g2, state
    cp.get_default_memory_pool().free_all_blocks()
    return out


def stencil3d(side, reps, iters=10):
    a, b = cp.zeros((side,) * 3), cp.zeros((side,) * 3)
    a[0], b[0] = 1.0, 1.0
    state = {"a": a, "b": b}
    IN, LO, HI = slice(1, -1), slice(0, -2), slice(2, None)

    def run():
        for _ in range(iters):
            u, v = state["a"], state["b"]
            FUSED7(u[IN, IN, IN], u[LO, IN, IN], u[HI, IN, IN], u[IN, LO, IN], u[IN, HI, IN], u[IN, IN, LO],
                   u[IN, IN, HI], 1.0 / 7.0, v[IN, IN, IN])
            state["a"], state["b"] = v, u

    pts = (side - 2) ** 3
    rate = pts * iters / device_time(run, reps, 1)
    del a, b, state
    cp.get_default_memory_pool().free_all_blocks()
    return {"side": side, "points/s": rate, "GB/s": rate * 16e-9}


def reductions(reps):
    n = 1 << 26
    x, y = cp.full(n, 2.0), cp.ones(n)
    side = 8192
    u = cp.full((side, side), 2.0)
    inner = u[1:-1, 1:-1]
    forms = {
        "sum": (lambda: x.sum(), 8.0 * n),
        "dot": (lambda: cp.dot(x, y), 16.0 * n),
        "norm2": (lambda: cp.linalg.norm(x), 8.0 * n),
        "norm2_expr": (lambda: cp.linalg.norm(x - y), 16.0 * n),
        "sum_2d": (lambda: u.sum(), 8.0 * side * side),
        "sum_2d_view": (lambda: inner.sum(), 8.0 * (side - 2) ** 2),
    }
    out = {"n": n, "side": side}
    for name, (fn, nbytes) in forms.items():
        t = device_time(fn, reps)
        out[name + "_us"] = t * 1e6
        out[name + "_GB/s"] = nbytes / t * 1e-9
    del x, y, u, inner
    cp.get_default_memory_pool().free_all_blocks()
    return out


def cfd(nx, steps, nit, reps):
    import numpy_cfd  # the NumPy program, run unchanged on CuPy

    numpy_cfd.np = cp
    k = numpy_cfd.Physics(nx, nx)
    rates = []
    for _ in range(reps):
        u, v, p = numpy_cfd.initialize(nx, nx)
        p = numpy_cfd.step(k, u, v, p, nit)
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            p = numpy_cfd.step(k, u, v, p, nit)
        cp.cuda.Device().synchronize()
        rates.append(nx * nx * steps / (time.perf_counter() - t0))
    return {"nx": nx, "ny": nx, "nit": nit, "steps": steps, "points/s": statistics.median(rates),
            "sum_u": float(u.sum()), "sum_v": float(v.sum()), "sum_p": float(p.sum())}


def poisson2d(n):
    import cupyx.scipy.sparse as sp

    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    i = sp.identity(n, format="csr")
    return (sp.kron(i, t) + sp.kron(t, i)).tocsr()


def cg(n, reps, iters=(100, 300)):
    import cupyx.scipy.sparse.linalg as spl

    a = poisson2d(n)
    b = cp.ones(a.shape[0])

    def solve(k):
        try:
            return spl.cg(a, b, rtol=1e-30, atol=0.0, maxiter=k)
        except TypeError:  # older CuPy: tol instead of rtol
            return spl.cg(a, b, tol=1e-30, atol=0.0, maxiter=k)

    t = [host_time(lambda: solve(k), reps, 1) for k in iters]
    per_iter = (t[1] - t[0]) / (iters[1] - iters[0])
    rows = a.shape[0]
    out = {"n": n, "rows": rows, "nnz": int(a.nnz), "ms_per_iteration": per_iter * 1e3,
           "GB/s_176B_per_row": 176.0 * rows / per_iter * 1e-9}
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return out


def convdiff2d(n, peclet=100.0):
    """sparse::convection_diffusion2d on n x n (petsc_common.stencil_matrix's rule) as cupyx CSR."""
    import numpy as np
    import cupyx.scipy.sparse as sp

    total, strides = n * n, [n, 1]
    k = np.arange(total, dtype=np.int64)
    coord = [k // n, k % n]
    c = [peclet / np.sqrt(2.0) / (n + 1)] * 2
    offsets, inside, values = [], [], []
    for d in range(2):  # minus neighbours by decreasing stride, the diagonal, plus neighbours
        offsets.append(-strides[d]); inside.append(coord[d] > 0); values.append(-1.0 - c[d])
    offsets.append(0); inside.append(np.ones_like(k, dtype=bool)); values.append(4.0 + sum(c))
    for d in (1, 0):
        offsets.append(strides[d]); inside.append(coord[d] + 1 < n); values.append(-1.0)
    inside = np.stack(inside, axis=1)
    cols = (k[:, None] + np.array(offsets)[None, :])[inside]
    vals = np.broadcast_to(np.array(values), inside.shape)[inside]
    indptr = np.concatenate([[0], np.cumsum(inside.sum(axis=1))])
    return sp.csr_matrix((cp.asarray(vals), cp.asarray(cols.astype(np.int32)),
                          cp.asarray(indptr.astype(np.int32))), shape=(total, total))


def krylov(n, reps, restart=30):
    """cupyx gmres(restart) and bicgstab (when CuPy has it) on convdiff2d: ms per iteration."""
    import cupyx.scipy.sparse.linalg as spl

    a = convdiff2d(n)
    b = a @ cp.ones(a.shape[0])
    out = {"n": n, "rows": a.shape[0], "nnz": int(a.nnz), "restart": restart}

    def gm(k):
        calls = [0]

        def count(_):
            calls[0] += 1
        t0 = time.perf_counter()
        spl.gmres(a, b, restart=restart, maxiter=k, rtol=1e-30, atol=0.0, callback=count,
                  callback_type="pr_norm")
        cp.cuda.Device().synchronize()
        return time.perf_counter() - t0, calls[0] * restart

    for _ in range(2):
        gm(2 * restart)
    small = [gm(2 * restart) for _ in range(reps)]
    big = [gm(10 * restart) for _ in range(reps)]
    dt = statistics.median(t for t, _ in big) - statistics.median(t for t, _ in small)
    di = big[0][1] - small[0][1]
    out["gmres_inner_iterations"] = [small[0][1], big[0][1]]
    out["gmres_ms_per_iteration"] = dt / di * 1e3 if di > 0 else None
    if hasattr(spl, "bicgstab"):
        def bs(k):
            t0 = time.perf_counter()
            spl.bicgstab(a, b, maxiter=k, rtol=1e-30, atol=0.0)
            cp.cuda.Device().synchronize()
            return time.perf_counter() - t0
        bs(50)
        t = [statistics.median(bs(k) for _ in range(reps)) for k in (100, 300)]
        out["bicgstab_ms_per_iteration"] = (t[1] - t[0]) / 200 * 1e3
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return out


def ffts(reps):
    """cp.fft.fftn (complex128) and cp.fft.rfftn (float64) on side^3 cubes, cuFFT plans cached
    by CuPy after the warm-up runs; a new output per call, as CuPy allocates it (from its pool)."""
    import math

    out = []
    for side in (256, 512):
        a = (cp.random.random((side,) * 3) + 1j * cp.random.random((side,) * 3)).astype(cp.complex128)
        r = cp.random.random((side,) * 3)
        t = device_time(lambda: cp.fft.fftn(a), reps)
        tr = device_time(lambda: cp.fft.rfftn(r), reps)
        n = float(side) ** 3
        out.append({"side": side, "fftn_ms": t * 1e3, "fftn_gflops": 5 * n * math.log2(n) / t * 1e-9,
                    "rfftn_ms": tr * 1e3, "rfftn_gflops": 2.5 * n * math.log2(n) / tr * 1e-9})
        del a, r
        cp.get_default_memory_pool().free_all_blocks()
    return out


def latency(reps):
    out = {}
    for n in (1000, 1 << 18):
        x = cp.ones(n)
        out[f"dot_to_host_n{n}_us"] = host_time(lambda: float(cp.dot(x, x)), reps) * 1e6
        out[f"sum_to_host_n{n}_us"] = host_time(lambda: float(x.sum()), reps) * 1e6
        out[f"norm2_to_host_n{n}_us"] = host_time(lambda: float(cp.linalg.norm(x)), reps) * 1e6
    a, b, c = cp.empty(1000), cp.ones(1000), cp.ones(1000)
    triad = cp.ElementwiseKernel("T b, T c, T s", "T a", "a = b + s * c", "peer_triad")
    out["fused_assign_n1000_us"] = host_time(lambda: triad(b, c, 3.0, a), reps) * 1e6
    out["numpy_style_assign_n1000_us"] = host_time(lambda: a.__setitem__(Ellipsis, b + 3.0 * c), reps) * 1e6
    g, h = stencil_grid(1022), stencil_grid(1022)
    out["stencil_iteration_1024_us"] = host_time(lambda: FUSED5(*views(g), h[1:-1, 1:-1]), reps) * 1e6
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="copy,stencil,stencil3d,reduce,cfd,cg,latency",
                   help="also: gmres, fft (not in the default set)")
    p.add_argument("--sizes", default="4096,8192,16384", help="stencil grid sides (n + 2)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    only = set(a.only.split(","))
    dev = cp.cuda.runtime.getDeviceProperties(0)
    res = {"peer": "cupy", "cupy": cp.__version__, "device": dev["name"].decode(), "repeat": a.repeat}

    def report(key, value):
        res[key] = value
        print(f"cupy {key}: {json.dumps(value)}", flush=True)

    if "copy" in only:
        report("copy", copy_bandwidth(a.repeat))
    if "stencil" in only:
        report("stencil", [stencil(int(s) - 2, a.repeat) for s in a.sizes.split(",")])
    if "stencil3d" in only:
        report("stencil3d", [stencil3d(s, a.repeat) for s in (256, 512)])
    if "reduce" in only:
        report("reduce", reductions(a.repeat))
    if "cfd" in only:
        report("cfd", cfd(4096, 10, 50, 3))
    if "cg" in only:
        report("cg", [cg(1024, a.repeat), cg(4096, 3)])
    if "fft" in only:
        report("fft", ffts(a.repeat))
    if "gmres" in only:
        report("gmres", [krylov(1024, a.repeat), krylov(2048, 3)])
    if "latency" in only:
        report("latency", latency(200))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
