import numpy as np
import pytest

import spmdarray as sa
from conftest import data

KEYS_2D = [np.s_[1:-1, ::2], np.s_[::-1, 3], np.s_[-3], np.s_[5::-2, 1:7:3], np.s_[..., -1], np.s_[2:2, :],
           np.s_[20:30], np.s_[:, ::-3], np.s_[-1, ::-1], np.s_[1::3, ...]]


@pytest.mark.parametrize("key", KEYS_2D)
def test_views_2d(rng, key):
    x = data(rng, (11, 8), np.float64)
    a = sa.array(x)
    v = a[key]
    assert v.shape == x[key].shape
    np.testing.assert_array_equal(np.asarray(v), x[key])
    # assignment into the view writes the parent
    y = x.copy()
    y[key] = -1.5
    a[key] = -1.5
    np.testing.assert_array_equal(a.gather(), y)


def test_views_3d_and_views_of_views(rng):
    x = data(rng, (6, 7, 5), np.int64)
    a = sa.array(x)
    for key in (np.s_[1, ::-1, 2:], np.s_[:, 3, :], np.s_[::2, ::3, -1], np.s_[-2, -1], np.s_[..., 1:4]):
        np.testing.assert_array_equal(a[key].gather(), x[key])
    v = a[1:, ::-1]
    w = v[::2, 1:-1, 3]
    np.testing.assert_array_equal(w.gather(), x[1:, ::-1][::2, 1:-1, 3])
    w[...] = w * 10 + 1
    x[1:, ::-1][::2, 1:-1, 3] = x[1:, ::-1][::2, 1:-1, 3] * 10 + 1
    np.testing.assert_array_equal(a.gather(), x)


def test_integer_index_drops_axis_and_elements(rng):
    x = data(rng, (5, 6), np.float64)
    a = sa.array(x)
    row = a[2]
    assert row.shape == (6,) and row.ndim == 1
    np.testing.assert_array_equal(row.gather(), x[2])
    assert a[2, 3] == x[2, 3] and a[-1, -1] == x[-1, -1]
    a[0, 1] = 42.0
    x[0, 1] = 42.0
    np.testing.assert_array_equal(a.gather(), x)
    b = sa.array(np.array([True, False, True]))
    assert b[1] == False and b[2] == True  # noqa: E712
    i = sa.arange(10, dtype=np.int32)
    assert i[7] == 7 and i[7].dtype == np.int32
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(ValueError):
        a[::0]


def test_slice_to_slice_assignment(rng):
    x, y = data(rng, (12, 10), np.float64), data(rng, (12, 10), np.float64)
    a, b = sa.array(x), sa.array(y)
    a[1:4, :] = b[2:8:2, 0:10]
    x[1:4, :] = y[2:8:2, 0:10]
    np.testing.assert_array_equal(a.gather(), x)
    a[:, 0] = a[:, -1] + b[::-1, 5]
    x[:, 0] = x[:, -1] + y[::-1, 5]
    np.testing.assert_array_equal(a.gather(), x)
    a[::-1] = a  # a reversed copy of itself (overlap: NumPy reads first)
    x[::-1] = x.copy()
    np.testing.assert_array_equal(a.gather(), x)
    a[3] = np.arange(10.0)  # a NumPy array on the right: distributed, then assigned
    x[3] = np.arange(10.0)
    np.testing.assert_array_equal(a.gather(), x)
