# Per-axis reductions (axis=, keepdims=, ddof=) and whole-array var / std / argmin / argmax against
# NumPy on the same data, at any rank count.
import numpy as np
import pytest

import spmdarray as sa
from conftest import data

try:
    AxisError = np.exceptions.AxisError
except AttributeError:
    AxisError = np.AxisError

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]
SHAPES = [(13,), (7, 5), (3, 4, 5)]


def axes_of(ndim):
    out = [None, 0, -1]
    if ndim >= 2:
        out += [(0, 1), (1,)]
    if ndim == 3:
        out += [(0, 2), (2, 0, 1), 1]
    return out


def check(got, ref, tol):
    if isinstance(got, sa.ndarray):
        assert got.shape == ref.shape, (got.shape, ref.shape)
        assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
        got = got.gather()
    else:
        assert np.ndim(ref) == 0 and np.asarray(got).dtype == np.asarray(ref).dtype, (type(got), type(ref))
    if tol:
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, ref)


def tol_of(dtype, fn):
    if fn in ("mean", "var", "std"):
        return 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
    if np.dtype(dtype).kind == "f" and fn in ("sum", "prod"):
        return 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
    return 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_axis_reductions(shape, dtype, rng):
    x = data(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        x = x / 4  # products stay moderate
    a = sa.array(x)
    for fn in ("sum", "prod", "min", "max", "mean", "var", "std", "any", "all"):
        for i, axis in enumerate(axes_of(len(shape))):
            keepdims = i % 3 == 1  # both forms, without testing every axis twice
            ref = getattr(np, fn)(x, axis=axis, keepdims=keepdims)
            check(getattr(sa, fn)(a, axis=axis, keepdims=keepdims), ref, tol_of(dtype, fn))
        # methods and NumPy's dispatch
        check(getattr(a, fn)(axis=0), getattr(np, fn)(x, axis=0), tol_of(dtype, fn))
        check(getattr(np, fn)(a, axis=-1), getattr(np, fn)(x, axis=-1), tol_of(dtype, fn))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_argmin_argmax(shape, dtype, rng):
    x = data(rng, shape, dtype)
    if np.dtype(dtype).kind == "i":
        x = x // 10  # ties: the first occurrence
    a = sa.array(x)
    for fn in ("argmin", "argmax"):
        for axis in [None] + list(range(-len(shape), len(shape))):
            for keepdims in (False, True):
                check(getattr(sa, fn)(a, axis=axis, keepdims=keepdims), getattr(np, fn)(x, axis=axis, keepdims=keepdims),
                      0)
        check(getattr(a, fn)(), getattr(np, fn)(x), 0)
        check(getattr(np, fn)(a, axis=0), getattr(np, fn)(x, axis=0), 0)


def test_nan_and_ties():
    x = np.array([[3.0, 1.0, np.nan, 1.0], [2.0, 2.0, 0.5, np.nan], [5.0, 0.0, 0.0, 4.0]])
    a = sa.array(x)
    for fn in ("argmin", "argmax"):
        for axis in (None, 0, 1):
            check(getattr(sa, fn)(a, axis=axis), getattr(np, fn)(x, axis=axis), 0)
    for fn in ("min", "max", "sum"):
        for axis in (0, 1):
            check(getattr(sa, fn)(a, axis=axis), getattr(np, fn)(x, axis=axis), 1e-12)


@pytest.mark.parametrize("ddof", [0, 1, 2, 7])
def test_var_std_ddof(ddof, rng):
    x = data(rng, (6, 7), np.float64)
    a = sa.array(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for fn in ("var", "std"):
                for axis in (None, 0, 1, (0, 1)):
                    check(getattr(sa, fn)(a, axis=axis, ddof=ddof), getattr(np, fn)(x, axis=axis, ddof=ddof), 1e-10)
                check(getattr(a, fn)(ddof=ddof), getattr(np, fn)(x, ddof=ddof), 1e-10)


def test_views_and_expressions(rng):
    x = data(rng, (9, 8), np.float64)
    y = data(rng, (9, 8), np.float64)
    a, b = sa.array(x), sa.array(y)
    check(sa.sum(a[1:-1, ::2], axis=0), np.sum(x[1:-1, ::2], axis=0), 1e-12)
    check(sa.max(a[::-1, 3], axis=0), np.max(x[::-1, 3], axis=0), 0)
    check(sa.mean(a * b + 1.0, axis=1), np.mean(x * y + 1.0, axis=1), 1e-12)
    check(sa.argmax(a[2:, 1:] - b[:-2, :-1], axis=1), np.argmax(x[2:, 1:] - y[:-2, :-1], axis=1), 0)
    check(sa.count_nonzero(a > 0, axis=0), np.count_nonzero(x > 0, axis=0), 0)
    check(sa.count_nonzero(sa.array(x.astype(np.int32) // 3), axis=1),
          np.count_nonzero(x.astype(np.int32) // 3, axis=1), 0)
    check(sa.sum(a, axis=()), np.sum(x, axis=()), 0)
    r = sa.sum(a, axis=1)
    check(sa.sum(r), np.sum(np.sum(x, axis=1)), 1e-12)  # a result is an array like any other


def test_empty_axes_like_numpy():
    x = np.zeros((3, 0))
    a = sa.array(x)
    check(sa.sum(a, axis=0), np.sum(x, axis=0), 0)
    check(sa.sum(a, axis=1), np.sum(x, axis=1), 0)
    check(sa.max(a, axis=0), np.max(x, axis=0), 0)
    for fn, msg in (("min", "zero-size array"), ("max", "zero-size array"), ("argmin", "empty sequence"),
                    ("argmax", "empty sequence")):
        with pytest.raises(ValueError, match=msg):
            getattr(sa, fn)(a, axis=1)


def test_axis_errors_like_numpy():
    a = sa.ones((4, 5))
    for call in (lambda: sa.sum(a, axis=2), lambda: sa.mean(a, axis=-3), lambda: sa.argmin(a, axis=2),
                 lambda: np.sum(a, axis=(0, 5))):
        with pytest.raises(AxisError):
            call()
    with pytest.raises(ValueError, match="duplicate"):
        sa.sum(a, axis=(0, -2))
    with pytest.raises(TypeError):
        sa.argmax(a, axis=(0, 1))
    with pytest.raises(NotImplementedError, match="out"):
        sa.sum(a, axis=0, out=a)
