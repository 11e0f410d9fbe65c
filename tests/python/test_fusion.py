import numpy as np
import pytest

import spmdarray as sa
from conftest import data


def close(a, ref, dtype=np.float64):
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(a), ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("shape", [(1000,), (37, 29), (6, 7, 9)])
@pytest.mark.parametrize("halo", [0, 1])
def test_five_operands(rng, shape, halo):
    xs = [data(rng, shape, np.float64) for _ in range(5)]
    a = [sa.array(x, halo=halo) for x in xs]
    out = sa.zeros(shape, halo=halo)
    out[...] = 0.2 * (a[0] + a[1] + a[2] + a[3] + a[4])
    close(out, 0.2 * (xs[0] + xs[1] + xs[2] + xs[3] + xs[4]))


def test_operators_float(rng):
    x, y, z = (data(rng, (40, 9), np.float64) for _ in range(3))
    y[3, 4] = np.nan
    a, b, c = sa.array(x), sa.array(y), sa.array(z)
    cases = [
        (a + b * c - a / (np.abs(c) + 1.0), x + y * z - x / (np.abs(z) + 1.0)),
        (-a, -x), (a ** 2.0, x ** 2.0), (2.0 - a, 2.0 - x), (1.0 / (np.abs(a) + 1), 1.0 / (np.abs(x) + 1)),
        (sa.sqrt(sa.abs(a)) + sa.exp(-sa.abs(b)), np.sqrt(np.abs(x)) + np.exp(-np.abs(y))),
        (sa.log(sa.abs(a) + 1) * sa.sin(b) + sa.cos(c), np.log(np.abs(x) + 1) * np.sin(y) + np.cos(z)),
        (sa.minimum(a, b), np.minimum(x, y)), (sa.maximum(a, b), np.maximum(x, y)),
        (sa.where(a > b, a, c), np.where(x > y, x, z)), (sa.where(a < 0, 0.0, a), np.where(x < 0, 0.0, x)),
        (np.sqrt(np.abs(a)) + np.maximum(a, 0.5), np.sqrt(np.abs(x)) + np.maximum(x, 0.5)),  # NumPy's ufuncs
    ]
    for i, (e, ref) in enumerate(cases):
        out = sa.empty(x.shape)
        out[...] = e
        np.testing.assert_allclose(out.gather(), ref, rtol=1e-13, atol=1e-12, err_msg=f"case {i}")


def test_comparisons_into_bool(rng):
    x, y = data(rng, (50,), np.float64), data(rng, (50,), np.float64)
    y[::7] = x[::7]
    a, b = sa.array(x), sa.array(y)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        m = sa.zeros((50,), np.bool_)
        m[...] = getattr(a, op)(b)
        np.testing.assert_array_equal(m.gather(), getattr(x, op)(y), err_msg=op)
    m = sa.zeros((50,), np.bool_)
    m[...] = ((a > 0) & (b < 1)) | ~(a == b)
    np.testing.assert_array_equal(m.gather(), ((x > 0) & (y < 1)) | ~(x == y))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
def test_other_program_types(rng, dtype):
    x, y = data(rng, (33, 8), dtype), data(rng, (33, 8), dtype)
    a, b = sa.array(x), sa.array(y)
    out = sa.zeros(x.shape, dtype)
    out[...] = a * b - 3 * a + sa.maximum(a, b)
    ref = x * y - 3 * x + np.maximum(x, y)
    assert out.dtype == ref.dtype
    close(out, ref, dtype)
    assert (a + b).dtype == (x + y).dtype and (a / b).dtype == (x / np.where(y == 0, 1, y)).dtype


def test_mixed_types(rng):
    i, f, s = data(rng, (30,), np.int32), data(rng, (30,), np.float64), data(rng, (30,), np.float32)
    ai, af, as_ = sa.array(i), sa.array(f), sa.array(s)
    j = np.where(i == 0, 1, i)
    aj = sa.array(j)
    cases = [(ai + af, i + f), (ai / aj, i / j), (as_ * 2.5, s * 2.5), (as_ + af, s + f), (ai * 0.5, i * 0.5),
             (0.5 * (ai + ai), 0.5 * (i + i)), (sa.where(ai > 0, af, -1.0), np.where(i > 0, f, -1.0)),
             (sa.sqrt(sa.abs(ai)), np.sqrt(np.abs(i)))]
    for k, (e, ref) in enumerate(cases):
        assert e.dtype == ref.dtype, k
        out = sa.empty(ref.shape, ref.dtype)
        out[...] = e
        close(out, ref, ref.dtype)
    # a destination of a third type: NumPy's cast on assignment
    out = sa.zeros((30,), np.int64)
    out[...] = af * 3.0
    np.testing.assert_array_equal(out.gather(), (f * 3.0).astype(np.int64))
    out = sa.zeros((30,), np.float64)
    out[...] = ai
    np.testing.assert_array_equal(out.gather(), i.astype(np.float64))
    out[...] = ai * ai  # int32 products wrap as NumPy's do, then convert
    np.testing.assert_array_equal(out.gather(), (i * i).astype(np.float64))


def test_reductions(rng):
    x, y = data(rng, (23, 7), np.float64), data(rng, (23, 7), np.float64)
    a, b = sa.array(x), sa.array(y)
    assert np.isclose(sa.sum(a * b + 1.0), np.sum(x * y + 1.0), rtol=1e-12)
    assert np.isclose(sa.dot(a[:, 0], b[:, 0]), np.dot(x[:, 0], y[:, 0]), rtol=1e-12)
    assert np.isclose(sa.vdot(a, b), np.vdot(x, y), rtol=1e-12)
    assert sa.min(a - b) == np.min(x - y) and sa.max(sa.abs(a)) == np.max(np.abs(x))
    assert np.isclose(sa.mean(a), np.mean(x), rtol=1e-12) and np.isclose(a.mean(), x.mean(), rtol=1e-12)
    assert np.isclose(sa.prod(a[:4, :3] * 0.5 + 1), np.prod(x[:4, :3] * 0.5 + 1), rtol=1e-12)
    assert sa.count_nonzero(a > b) == np.count_nonzero(x > y)
    assert sa.sum(a > 0) == np.sum(x > 0) and sa.sum(a > 0).dtype == np.sum(x > 0).dtype
    assert bool(sa.any(a > 10)) == bool(np.any(x > 10)) and bool(sa.all(a > -100)) == bool(np.all(x > -100))
    assert np.sum(a) == sa.sum(a)  # numpy.sum dispatches to spmdarray's
    i = data(rng, (40,), np.int32) * 1000000
    ai = sa.array(i)
    s = sa.sum(ai * ai)  # NumPy: int32 products (wrapping), summed in int64
    assert s == np.sum(i * i) and s.dtype == np.sum(i * i).dtype
    assert sa.sum(ai) == np.sum(i) and sa.max(ai) == np.max(i) and sa.max(ai).dtype == np.int32
    f = sa.array(data(rng, (100,), np.float32))
    assert sa.sum(f).dtype == np.float32
    z = x.copy()
    z[2, 3] = np.nan
    assert np.isnan(sa.max(sa.array(z))) and np.isnan(sa.min(sa.array(z) + 1))


def test_aliasing_numpy_semantics(rng):
    x = data(rng, (64,), np.float64)
    for halo in (0, 1, 2):
        a = sa.array(x, halo=halo)
        a[1:] = a[:-1]  # NumPy reads every old value first
        r = x.copy()
        r[1:] = r[:-1]
        np.testing.assert_array_equal(a.gather(), r)
        a = sa.array(x, halo=halo)
        a[:-1] = a[1:] * 2.0
        r = x.copy()
        r[:-1] = r[1:] * 2.0
        np.testing.assert_array_equal(a.gather(), r)
    u0 = data(rng, (19, 17), np.float64)
    for halo in (0, 1):
        u = sa.array(u0, halo=halo)
        ref = u0.copy()
        for _ in range(3):  # in-place Jacobi: NumPy evaluates the right side first
            u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
            ref[1:-1, 1:-1] = 0.25 * (ref[:-2, 1:-1] + ref[2:, 1:-1] + ref[1:-1, :-2] + ref[1:-1, 2:])
        np.testing.assert_allclose(u.gather(), ref, rtol=1e-14)


def test_shifted_reads_across_ranks(rng):
    x = data(rng, (50,), np.float64)
    for halo in (0, 1):
        a = sa.array(x, halo=halo)  # written: the halo is stale until exchanged
        b = sa.zeros((50,), halo=halo)
        b[1:-1] = a[1:-1] + a[:-2]
        r = np.zeros(50)
        r[1:-1] = x[1:-1] + x[:-2]
        np.testing.assert_array_equal(b.gather(), r)
        a[...] = a * 3.0  # a written again: the next shifted read must see the new values
        b[1:-1] = a[2:] - a[:-2]
        r[1:-1] = 3 * x[2:] - 3 * x[:-2]
        np.testing.assert_array_equal(b.gather(), r)
        assert np.isclose(sa.sum(a[1:] * a[:-1]), np.sum(9 * x[1:] * x[:-1]), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_shifts_along_split_axes(rng, comm, dtype):
    # arrays without a halo on grids that split the shifted axes: the rank's box is read in place
    # inside and its edges from buffers of exactly the rows and columns beyond (impl::assign_split)
    x0 = data(rng, (13, 11), dtype)
    for grid in (None, (comm.size, 1), (1, comm.size)):
        a, b = sa.array(x0, grid=grid), sa.zeros((13, 11), dtype, grid=grid)
        x, y = x0.copy(), np.zeros((13, 11), dtype)
        for _ in range(2):  # double buffer, then in place (NumPy reads every old value first)
            b[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] - a[1:-1, :-2] * 2 + a[1:-1, 2:] - a[:-2, 2:]
            y[1:-1, 1:-1] = x[:-2, 1:-1] + x[2:, 1:-1] - x[1:-1, :-2] * 2 + x[1:-1, 2:] - x[:-2, 2:]
            a[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] - a[1:-1, :-2] * 2 + a[1:-1, 2:] - a[:-2, 2:]
            x[1:-1, 1:-1] = x[:-2, 1:-1] + x[2:, 1:-1] - x[1:-1, :-2] * 2 + x[1:-1, 2:] - x[:-2, 2:]
            close(b.gather(), y, dtype)
            close(a.gather(), x, dtype)
        a[11:0:-1, 1:9] = a[12:1:-1, 2:10] - a[10::-1, 0:8]  # reversed rows, diagonal shifts
        x[11:0:-1, 1:9] = x[12:1:-1, 2:10] - x[10::-1, 0:8]
        close(a.gather(), x, dtype)
    u0 = data(rng, (7, 6, 9), dtype)
    u, r = sa.array(u0), u0.copy()
    u[1:-1, 1:-1, 1:-1] = u[:-2, 1:-1, 1:-1] - u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 1:-1, 2:]
    r[1:-1, 1:-1, 1:-1] = r[:-2, 1:-1, 1:-1] - r[2:, 1:-1, 1:-1] + r[1:-1, :-2, 1:-1] + r[1:-1, 1:-1, 2:]
    close(u.gather(), r, dtype)


def test_in_place_operators(rng):
    x = data(rng, (20, 3), np.float64)
    a = sa.array(x)
    a += 1.0
    a *= a
    a[2:5] -= 4.0
    a /= 2
    r = ((x + 1.0) * (x + 1.0))
    r[2:5] -= 4.0
    r /= 2
    np.testing.assert_array_equal(a.gather(), r)
    i = sa.zeros((3,), np.int32)
    with pytest.raises(TypeError):
        i += 1.5  # NumPy: same_kind casting


def test_same_rank_broadcast(rng):
    x, row = data(rng, (9, 6), np.float64), data(rng, (1, 6), np.float64)
    a, r = sa.array(x), sa.array(row)
    out = sa.zeros((9, 6))
    out[...] = a - r
    np.testing.assert_array_equal(out.gather(), x - row)
    out[...] = r
    np.testing.assert_array_equal(out.gather(), np.broadcast_to(row, (9, 6)))


def test_large_expression_splits():
    xs = [np.arange(12.0) + k for k in range(11)]
    a = [sa.array(x) for x in xs]
    e = a[0]
    ref = xs[0]
    for k in range(1, 11):  # 11 operands: more than one program holds
        e = e * 0.5 + a[k]
        ref = ref * 0.5 + xs[k]
    out = sa.empty((12,))
    out[...] = e
    np.testing.assert_allclose(out.gather(), ref, rtol=1e-14)
    assert np.isclose(sa.sum(e), ref.sum(), rtol=1e-13)


def test_bool_arrays_in_programs(rng):
    x, y = data(rng, (31,), np.float64), data(rng, (31,), np.float64)
    m = data(rng, (31,), np.bool_)
    a, b, am = sa.array(x), sa.array(y), sa.array(m)
    out = sa.zeros((31,))
    out[...] = sa.where(am, a, b * 2.0)
    np.testing.assert_array_equal(out.gather(), np.where(m, x, y * 2.0))
    nm = sa.zeros((31,), np.bool_)
    nm[...] = ~am | (a > b)  # a program of bools and a float comparison
    np.testing.assert_array_equal(nm.gather(), ~m | (x > y))
    nm[...] = ~am  # bools only
    np.testing.assert_array_equal(nm.gather(), ~m)
    assert sa.count_nonzero(am) == np.count_nonzero(m) and sa.sum(am) == np.sum(m)
    f = sa.zeros((31,), np.float32)
    f[...] = am  # bool into float32: NumPy's cast
    np.testing.assert_array_equal(f.gather(), m.astype(np.float32))
    a[...] = a  # itself: nothing to do
    np.testing.assert_array_equal(a.gather(), x)
