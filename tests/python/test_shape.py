# Shape functions, cumsum / cumprod and sorting against NumPy on the same data.
import numpy as np
import pytest

import spmdarray as sa
from conftest import data

try:
    AxisError = np.exceptions.AxisError
except AttributeError:
    AxisError = np.AxisError

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]


def same(got, ref):
    assert isinstance(got, sa.ndarray)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    np.testing.assert_array_equal(got.gather(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_ravel_transpose(dtype, rng):
    x = data(rng, (4, 6, 5), dtype)
    a = sa.array(x)
    for shape in ((120,), (12, 10), (-1, 8), (2, 3, 20), (5, -1, 4), 120):
        same(sa.reshape(a, shape), np.reshape(x, shape))
    same(a.reshape(10, 12), x.reshape(10, 12))
    same(a.reshape((3, 40)), x.reshape((3, 40)))
    same(np.reshape(a[1:, ::2], (3, -1)), np.reshape(x[1:, ::2], (3, -1)))
    same(sa.ravel(a), np.ravel(x))
    same(a.ravel(), x.ravel())
    same(a.flatten(), x.flatten())
    same(a.T, x.T)
    same(a.transpose(1, 0, 2), x.transpose(1, 0, 2))
    same(np.transpose(a, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
    same(sa.transpose(a[:, 2, :]), x[:, 2, :].T)
    same(sa.transpose(a[1]).T, x[1])
    with pytest.raises(ValueError, match="cannot reshape"):
        sa.reshape(a, (7, -1))
    with pytest.raises(ValueError, match="cannot reshape"):
        sa.reshape(a, (11, 11))
    with pytest.raises(ValueError, match="one unknown"):
        sa.reshape(a, (-1, -1, 6))
    with pytest.raises(ValueError, match="axes don't match"):
        sa.transpose(a, (0, 1))
    with pytest.raises(NotImplementedError):
        sa.reshape(a, (2, 2, 5, 6))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_flip_roll_squeeze(dtype, rng):
    x = data(rng, (5, 7, 3), dtype)
    a = sa.array(x)
    for axis in (None, 0, 1, -1, (0, 2)):
        same(sa.flip(a, axis), np.flip(x, axis))
    for shift, axis in ((2, None), (-3, 0), (9, 1), (1, -1), ((1, 2), (0, 1)), (0, 2), (4, (0, 2))):
        same(sa.roll(a, shift, axis), np.roll(x, shift, axis))
    same(np.roll(a[::2], 1, 1), np.roll(x[::2], 1, 1))
    y = data(rng, (1, 6, 1), dtype)
    b = sa.array(y)
    same(sa.squeeze(b), np.squeeze(y))
    same(b.squeeze(axis=0), y.squeeze(axis=0))
    same(np.squeeze(b, axis=(2,)), np.squeeze(y, axis=(2,)))
    with pytest.raises(ValueError):
        sa.squeeze(b, axis=1)
    with pytest.raises(AxisError):
        sa.flip(a, 3)


def test_concatenate_stack_expand_dims(rng):
    x, y = data(rng, (4, 3), np.float64), data(rng, (2, 3), np.float64)
    z = data(rng, (4, 3), np.int32)
    a, b, c = sa.array(x), sa.array(y), sa.array(z)
    same(sa.concatenate((a, b)), np.concatenate((x, y)))
    same(sa.concatenate([a, c, a[::-1]], axis=1), np.concatenate([x, z, x[::-1]], axis=1))
    same(np.concatenate((a, b), axis=None), np.concatenate((x, y), axis=None))
    same(sa.concatenate((c, c), axis=-1), np.concatenate((z, z), axis=-1))
    same(sa.stack((a, c)), np.stack((x, z)))
    same(np.stack([a, a * 2.0, c], axis=2), np.stack([x, x * 2.0, z], axis=2))
    same(sa.stack((a[0], c[1]), axis=-1), np.stack((x[0], z[1]), axis=-1))
    same(sa.expand_dims(a, 0), np.expand_dims(x, 0))
    same(np.expand_dims(c, -1), np.expand_dims(z, -1))
    same(sa.expand_dims(a[:, 1], (0, 2)), np.expand_dims(x[:, 1], (0, 2)))
    with pytest.raises(ValueError, match="dimension 1"):
        sa.concatenate((a, sa.ones((4, 2))))
    with pytest.raises(ValueError, match="same number of dimensions"):
        sa.concatenate((a, sa.ones(3)))
    with pytest.raises(ValueError, match="same shape"):
        sa.stack((a, b))
    with pytest.raises(AxisError):
        sa.concatenate((a, b), axis=2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_cumprod(dtype, rng):
    x = data(rng, (6, 5, 4), dtype)
    if np.dtype(dtype).kind == "f":
        x = x / 4
    elif np.dtype(dtype).kind == "i":
        x = x % 3
    a = sa.array(x)
    for fn in ("cumsum", "cumprod"):
        for axis in (None, 0, 1, -1):
            got, ref = getattr(sa, fn)(a, axis), getattr(np, fn)(x, axis)
            assert got.shape == ref.shape and got.dtype == ref.dtype
            np.testing.assert_allclose(got.gather(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-5 if dtype == np.float32 else 1e-12)
    for got, ref in ((np.cumsum(a[2, :, 1]), np.cumsum(x[2, :, 1])), (a[:, 0, 0].cumsum(), x[:, 0, 0].cumsum())):
        assert got.shape == ref.shape and got.dtype == ref.dtype  # across ranks: equal to roundoff (scan.hpp)
        np.testing.assert_allclose(got.gather(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-5 if dtype == np.float32 else 1e-12)
    with pytest.raises(AxisError):
        sa.cumsum(a, 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort(dtype, rng):
    x = data(rng, (101,), dtype)
    if np.dtype(dtype).kind == "f":
        x[[3, 50, 77]] = np.nan
    a = sa.array(x)
    same(sa.sort(a), np.sort(x))
    same(np.sort(a), np.sort(x))
    same(sa.argsort(a), np.argsort(x, kind="stable"))
    same(sa.unique(a), np.unique(x))
    y = data(rng, (6, 7), dtype)
    same(sa.sort(sa.array(y), axis=None), np.sort(y, axis=None))
    b = sa.array(x)
    b.sort()
    same(b, np.sort(x))
    same(sa.sort(a[::-3]), np.sort(x[::-3]))
    with pytest.raises(NotImplementedError, match="sort"):
        sa.sort(sa.array(y))
