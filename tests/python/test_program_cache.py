# The fused assignment's op_lin instruction (sums and differences of operands, scaled) and the cache
# of compiled programs keyed by the tree's structure (python/spmdarray/__init__.py's _PROGRAMS):
# every result is compared with NumPy's on the same data.
import numpy as np
import pytest

import spmdarray as sa
from spmdarray import _expr
from conftest import data


def check(out, ref, dtype=np.float64):
    d = np.dtype(dtype)
    if d.kind == "f":
        # op_lin sums in the tree's order: the same rounding as NumPy's (exact but for FMA contraction)
        rtol = 1e-6 if d == np.float32 else 1e-14
        np.testing.assert_allclose(out.gather(), ref, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(out.gather(), ref)


def lin_count(e, ndim):
    """Instructions of the program that e compiles to: (op_lin count, op_load count)."""
    p = _expr.Program(e.dtype)
    _expr.gen(p, e, lambda x: x._h)
    ops = p.code[0::5]
    return ops.count(_expr.CODE["lin"]), ops.count(_expr.CODE["load"])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
@pytest.mark.parametrize("shape", [(1000,), (37, 29), (6, 7, 9)])
def test_lin_forms(rng, dtype, shape):
    xs = [data(rng, shape, dtype) for _ in range(9)]
    a = [sa.array(x) for x in xs]
    two, three = (2.5, -1.5) if np.dtype(dtype).kind == "f" else (2, -3)
    cases = [
        (lambda v: v[0] + v[1], None),
        (lambda v: v[0] - v[1] + v[2] - v[3], None),
        (lambda v: two * v[0] + v[1] * three, None),
        (lambda v: v[0] - two * v[1] - v[2] * three, None),
        (lambda v: two * (v[0] + v[1] + v[2] + v[3] + v[4]), None),
        (lambda v: (v[0] - v[1]) * three, None),
        (lambda v: v[0] + (v[1] + v[2]), None),  # right operand kept as one term (NumPy's rounding)
        (lambda v: v[0] + v[1] * v[2] - v[3], None),  # a term in a register
        (lambda v: v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7] + v[8] - v[0], None),  # > 8 terms
        (lambda v: v[0] + 1 - v[1], None),  # a constant term
        (lambda v: two * v[0], None),
        (lambda v: v[0] + v[0] - v[1], None),  # one operand twice
    ]
    for i, (f, _) in enumerate(cases):
        out = sa.empty(shape, dtype)
        out[...] = f(a)
        with np.errstate(over="ignore"):
            ref = f([x for x in xs]).astype(dtype) if np.dtype(dtype).kind == "f" else f(xs)
        check(out, ref, dtype)


def test_lin_is_one_instruction():
    a, b, c, d, e = (sa.ones((50,)) for _ in range(5))
    assert lin_count(0.2 * (a + b + c + d + e), 1) == (1, 0)
    assert lin_count(2.0 * a - b * 3.0, 1) == (1, 0)
    assert lin_count(a * b + c, 1) == (1, 2)  # a * b in a register, c read by op_lin


def test_cache_reuse_different_operands_and_constants(rng):
    shape = (23, 17)
    xs = [data(rng, shape, np.float64) for _ in range(6)]
    a = [sa.array(x) for x in xs]
    out = sa.empty(shape)
    sa._PROGRAMS.clear()
    for k, (i, j, c) in enumerate([(0, 1, 0.5), (2, 3, -4.0), (4, 5, 1e3), (1, 0, 0.0)]):
        out[...] = c * (a[i] - a[j]) + 3.0 * a[i]
        check(out, c * (xs[i] - xs[j]) + 3.0 * xs[i])
    assert len(sa._PROGRAMS) == 1  # one structure: compiled once
    for n in range(3):  # a loop statement that reads its destination
        a[0][...] = 0.5 * (a[0] + a[1])
        xs[0] = 0.5 * (xs[0] + xs[1])
    check(a[0], xs[0])


def test_cache_aliasing_is_part_of_the_key(rng):
    shape = (40,)
    x, y = data(rng, shape, np.float64), data(rng, shape, np.float64)
    a, b = sa.array(x), sa.array(y)
    out = sa.empty(shape)
    sa._PROGRAMS.clear()
    out[...] = a * b + a  # operand classes (0, 1, 0)
    check(out, x * y + x)
    out[...] = a * b + b  # same ops, other aliasing: another program
    check(out, x * y + y)
    out[...] = a * a + b  # and another
    check(out, x * x + y)
    assert len(sa._PROGRAMS) == 3
    # the same data through two Python objects is two operands, never one by accident
    out[...] = a[...] * b + a
    check(out, x * y + x)
    out[...] = b[...] * a + b
    check(out, y * x + y)


def test_cache_dtypes_and_shapes_in_key(rng):
    sa._PROGRAMS.clear()
    for dtype in (np.float64, np.float32, np.int64, np.int32):
        xs = [data(rng, (30,), dtype) for _ in range(2)]
        a = [sa.array(x) for x in xs]
        out = sa.empty((30,), dtype)
        out[...] = 3 * (a[0] + a[1])
        check(out, (3 * (xs[0] + xs[1])).astype(dtype), dtype)
    x = data(rng, (30,), np.float64)
    a = sa.array(x)
    for s in (slice(0, 10), slice(5, 30, 2)):  # other shapes: other keys, the checks still run
        out = sa.empty(x[s].shape)
        out[...] = 3 * (a[s] + a[s])
        check(out, 3 * (x[s] + x[s]))
    out = sa.empty((10,))
    with pytest.raises(ValueError):
        out[...] = 3 * (a + a)  # a shape mismatch raises, cached or not
    # a float scalar into an int expression promotes: another key than an int scalar
    i = sa.array(np.arange(30, dtype=np.int64))
    f = sa.empty((30,))
    f[...] = 2 * (i + i)
    check(f, (2 * (np.arange(30) * 2)).astype(np.float64))
    f[...] = 0.5 * (i + i)
    check(f, 0.5 * (np.arange(30) * 2.0))


def test_cache_with_halo_and_shifts(rng):
    n = 64
    x = data(rng, (n,), np.float64)
    u = sa.array(x, halo=1)
    v = sa.array(x)
    sa._PROGRAMS.clear()
    for _ in range(3):  # Jacobi sweeps in place: NumPy's semantics (right side first), stale halos filled
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
        v[1:-1] = 0.5 * (v[:-2] + v[2:])
        x[1:-1] = 0.5 * (x[:-2] + x[2:])
        check(u, x)
        check(v, x)


def test_reductions_cached(rng):
    """Reductions of expressions compile once a structure, as assignments do: new operands and
    scalars of one key give NumPy's values (sums compared within the summation-order bound)."""
    xs = [data(rng, (41, 13), np.float64) for _ in range(4)]
    a = [sa.array(x) for x in xs]
    sa._PROGRAMS.clear()
    for i, s in enumerate((0.5, -2.0, 3.25)):
        x, y = (i % 4, (i + 1) % 4)
        got = sa.sum(a[x] * s - a[y])
        ref = np.sum(xs[x] * s - xs[y])
        assert abs(got - ref) <= 41 * 13 * np.finfo(float).eps * np.abs(xs[x] * s - xs[y]).sum()
        got = sa.max(a[x] + s * a[y])
        assert got == np.max(xs[x] + s * xs[y])
        got = sa.dot(a[x].ravel(), a[y].ravel())
        assert abs(got - np.dot(xs[x].ravel(), xs[y].ravel())) <= 600 * np.finfo(float).eps * \
            np.abs(xs[x] * xs[y]).sum()
    keys = [k for k in sa._PROGRAMS if k[0] == "reduce"]
    assert 1 <= len(keys) <= 3, keys  # one a structure (sum, max: different trees; dot: its own)
    # a view of another shape is another key; an integer tree its own type
    b = sa.array(xs[0].astype(np.int32))
    assert sa.sum(b * 3 + b) == np.sum(xs[0].astype(np.int32) * 3 + xs[0].astype(np.int32))
    assert sa.sum(a[0][1:, ::2] * 2.0) == pytest.approx(np.sum(xs[0][1:, ::2] * 2.0), rel=1e-13)


def test_square_is_numpys(rng):
    """x ** 2 is NumPy's square (x * x), x ** 0.5 its sqrt, x ** -1 its reciprocal: the same bits."""
    x = data(rng, (300,), np.float64)
    a = sa.array(x)
    np.testing.assert_array_equal(_gather(a**2), x**2)
    out = sa.empty((300,))
    out[...] = (a - 1.5)**2 + a**-1
    np.testing.assert_array_equal(out.gather(), (x - 1.5)**2 + x**-1)
    out[...] = abs(a)**0.5
    np.testing.assert_array_equal(out.gather(), np.abs(x)**0.5)
    i = sa.array(np.arange(-6, 7, dtype=np.int32))
    assert (i**2).dtype == np.int32
    np.testing.assert_array_equal(_gather(i**2), np.arange(-6, 7, dtype=np.int32)**2)
    f = i**2.0  # an integer array ** a float: NumPy's float64 power, not a square
    assert f.dtype == np.float64
    np.testing.assert_array_equal(_gather(f), np.arange(-6, 7, dtype=np.int32)**2.0)
    assert sa.sum(i * 3 + i) == np.sum(np.arange(-6, 7, dtype=np.int32) * 4)  # int32 summed in int64
    out[...] = a**3.0  # other exponents: pow
    np.testing.assert_allclose(out.gather(), x**3.0, rtol=1e-15)


def _gather(e):
    out = sa.empty(e.shape, e.dtype)
    out[...] = e
    return out.gather()


@pytest.mark.parametrize("shape", [(10007,), (3, 9001)])
def test_long_rows(rng, shape):
    """Rows longer than the host engine's items (4096 points) and than a chunk (256): the row loops
    take the program's values a chunk at a time (impl::has_runs), clipped to each item."""
    xs = [data(rng, shape, np.float64) for _ in range(3)]
    a, b, c = (sa.array(x) for x in xs)
    out = sa.empty(shape)
    out[...] = 0.5 * (a + b) - c * a
    ref = 0.5 * (xs[0] + xs[1]) - xs[2] * xs[0]  # a device may contract c * a into the subtraction
    np.testing.assert_allclose(out.gather(), ref, rtol=0, atol=4 * np.finfo(float).eps * np.abs(ref).max())
    mx, mx_ref = sa.max(a * b + c), np.max(xs[0] * xs[1] + xs[2])
    assert abs(mx - mx_ref) <= 4 * np.finfo(float).eps * abs(mx_ref)
    s = sa.sum(a * b - c)
    ref = np.sum(xs[0] * xs[1] - xs[2])
    assert abs(s - ref) <= xs[0].size * np.finfo(float).eps * np.abs(xs[0] * xs[1] - xs[2]).sum()


def test_copies_cached(rng):
    """A copy statement (dst[...] = an array) compiles once a structure too: each run binds the
    array it is given; the same view is a no-op; a copy of another dtype converts (uncached)."""
    shape = (19, 23)
    x, y = data(rng, shape, np.float64), data(rng, shape, np.float64)
    a, b = sa.array(x), sa.array(y)
    sa._PROGRAMS.clear()
    for src, ref in ((a, x), (b, y), (a, x)):
        for r in range(2):  # the walls of cuNumeric's CFD example, from two sources
            a[-1, :] = src[-2 + r, :]
            x[-1, :] = ref[-2 + r, :]
            a[:, 0] = src[:, 1]
            x[:, 0] = ref[:, 1]
            check(a, x)
    assert len(sa._PROGRAMS) == 2  # a row and a column: two shapes, each compiled once
    a[2:5, ::3] = a[2:5, ::3]  # the same view: nothing to do
    check(a, x)
    f = sa.array(y.astype(np.float32))
    for _ in range(2):  # another dtype: converted on every run, and right
        a[1, :] = f[3, :]
        x[1, :] = y.astype(np.float32)[3, :]
        check(a, x)
    # a halo is part of the key: a stale halo read by a copy at a shift is filled first
    n = 40
    z = data(rng, (n,), np.float64)
    u, w = sa.array(z, halo=1), sa.array(z)
    for _ in range(3):
        u[1:] = u[:-1]
        w[1:] = w[:-1]
        z[1:] = z[:-1].copy()
        check(u, z)
        check(w, z)


def test_views_keep_their_selection(rng):
    """A view's selection is kept on the Python object (ndarray._geometry): views of views,
    negative steps and dropped axes read what NumPy's do, and a view's key follows its shape."""
    x = data(rng, (11, 9, 7), np.float64)
    a = sa.array(x)
    for key in ((slice(None, None, -2), 3), (1, slice(2, None)), (slice(1, -1), slice(None), slice(None, None, -3))):
        v, r = a[key], x[key]
        assert v.shape == r.shape
        np.testing.assert_array_equal(v.gather(), r)
        vv, rr = v[::-1], r[::-1]
        np.testing.assert_array_equal(vv.gather(), rr)
        assert vv._geometry()[:4] == (tuple(vv._h.start), tuple(vv._h.step), tuple(vv._h.map), tuple(vv._h.shape))
        assert vv._k == _expr.leaf_key(sa.ndarray(vv._h))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_whole_copy(rng, dtype):
    """q[...] = p for whole arrays of one type and distribution copies the rank's storage (no
    program), halo flag included: a shifted read of q afterwards sees p's values, whether p's halo
    was fresh or stale (its halo then holds older values); views of q see the copy; a tree built on q before the copy keeps q's old
    values; another distribution or dtype takes the program, with the same results."""
    shape = (17, 12)
    x = data(rng, shape, dtype)
    y = data(rng, shape, dtype)
    for p_stale in (False, True):
        p, q = sa.array(-y if np.dtype(dtype).kind != "b" else ~y, halo=1), sa.array(y, halo=1)
        p.exchange_halo()
        q.exchange_halo()
        if p_stale:  # new values through a program (another distribution): p's halo is stale
            p[...] = sa.array(x)
            assert p._h.halo_stale
        else:
            p[...] = sa.array(x)
            p.exchange_halo()
        v = q[2:5, ::3]  # a view of q, made before the copy
        sa._PROGRAMS.clear()
        q[...] = p
        assert len(sa._PROGRAMS) == 0  # no program compiled: the storage was copied
        assert q._h.halo_stale == p_stale
        np.testing.assert_array_equal(q.gather(), x)
        np.testing.assert_array_equal(v.gather(), x[2:5, ::3])
        if np.dtype(dtype).kind != "b":  # shifted reads through q's halo (across ranks at 2+)
            r = sa.zeros(shape, dtype, halo=1)  # q's distribution: q is read in place
            r[1:-1, 1:-1] = q[2:, 1:-1] - q[:-2, 1:-1] + q[1:-1, 2:]
            np.testing.assert_array_equal(r.gather()[1:-1, 1:-1], x[2:, 1:-1] - x[:-2, 1:-1] + x[1:-1, 2:])
    if np.dtype(dtype).kind != "b":
        # a lazy tree on q, built before the write, keeps q's old values
        p, q = sa.array(x), sa.array(y)
        t = q + q
        q[...] = p
        np.testing.assert_array_equal(q.gather(), x)
        r = sa.zeros(shape, dtype)
        r[...] = t
        np.testing.assert_array_equal(r.gather(), y + y)
    # another halo width, another dtype: not the storage copy; the same values
    p, q = sa.array(x, halo=1), sa.array(y)
    q[...] = p
    np.testing.assert_array_equal(q.gather(), x)
    w = sa.array(y.astype(np.float32))
    w[...] = p
    np.testing.assert_array_equal(w.gather(), x.astype(np.float32))
