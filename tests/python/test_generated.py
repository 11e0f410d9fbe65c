# linspace, eye, identity and spmdarray.random. linspace / eye against NumPy; random against the
# same draws made on a one-rank communicator (the values do not depend on the rank count).
import numpy as np
import pytest

import spmdarray as sa


@pytest.mark.parametrize("args", [(0.0, 1.0, 11), (-3, 7, 50), (2.0, -1.0, 7), (1.0, 1.0, 4), (0.0, 1.0, 1),
                                  (0.0, 1.0, 0), (0, 10, 13)])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("dtype", [None, np.float32])
def test_linspace(args, endpoint, dtype):
    a = sa.linspace(*args, endpoint=endpoint, dtype=dtype)
    r = np.linspace(*args, endpoint=endpoint, dtype=dtype)
    assert a.dtype == r.dtype and a.shape == r.shape
    np.testing.assert_array_equal(a.gather(), r)
    a, s = sa.linspace(*args, endpoint=endpoint, retstep=True)
    with np.errstate(all="ignore"):
        r, rs = np.linspace(*args, endpoint=endpoint, retstep=True)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(rs))
    with pytest.raises(ValueError, match="non-negative"):
        sa.linspace(0, 1, -1)


@pytest.mark.parametrize("nmk", [(5, None, 0), (4, 7, 1), (6, 3, -2), (5, 5, 9), (1, 8, -1), (0, 3, 0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_eye(nmk, dtype):
    n, m, k = nmk
    a = sa.eye(n, m, k, dtype=dtype)
    r = np.eye(n, m, k, dtype=dtype)
    assert a.dtype == r.dtype and a.shape == r.shape
    np.testing.assert_array_equal(a.gather(), r)
    np.testing.assert_array_equal(sa.identity(n, dtype).gather(), np.identity(n, dtype))
    np.testing.assert_array_equal(sa.eye(6, halo=1).gather(), np.eye(6))


def one_rank():
    from mpi4py import MPI
    return sa.Comm.from_mpi4py(MPI.COMM_SELF)


@pytest.mark.parametrize("shape", [(1000,), (31, 17), (5, 6, 7)])
def test_random_same_at_any_rank_count(shape):
    self = one_rank()
    for dtype in (np.float64, np.float32):
        g, h = sa.random.default_rng(7), sa.random.default_rng(7)
        for draw in (lambda r, **k: r.random(shape, dtype=dtype, **k),
                     lambda r, **k: r.uniform(-2.0, 3.0, shape, dtype=dtype, **k),
                     lambda r, **k: r.standard_normal(shape, dtype=dtype, **k),
                     lambda r, **k: r.normal(1.0, 0.5, shape, dtype=dtype, **k)):
            a, b = draw(g), draw(h, comm=self)  # the same calls: the same streams
            assert a.dtype == np.dtype(dtype) and a.shape == shape
            np.testing.assert_array_equal(a.gather(), b.gather())
    g, h = sa.random.default_rng(2**63 + 5), sa.random.default_rng(2**63 + 5)
    for dtype in (np.int64, np.int32):
        a, b = g.integers(-5, 9, shape, dtype=dtype), h.integers(-5, 9, shape, dtype=dtype, comm=self)
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(a.gather(), b.gather())
    # another halo and grid: the same numbers
    u = sa.random.default_rng(3).random(shape, halo=1)
    np.testing.assert_array_equal(u.gather(), sa.random.default_rng(3).random(shape, comm=self).gather())


def test_random_values_and_streams():
    g = sa.random.default_rng(11)
    u = g.random(20000).gather()
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.02
    v = g.random(20000).gather()
    assert not np.array_equal(u, v)  # the next call: the next stream
    z = g.standard_normal((100, 200)).gather()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03
    k = g.integers(6, size=6000).gather()
    assert k.dtype == np.int64 and k.min() == 0 and k.max() == 5
    k = g.integers(1, 6, size=6000, endpoint=True, dtype=np.int32).gather()
    assert k.dtype == np.int32 and k.min() == 1 and k.max() == 6
    w = g.uniform(2.0, 4.0, 5000, dtype=np.float32).gather()
    assert w.dtype == np.float32 and w.min() >= 2.0 and w.max() < 4.0
    np.testing.assert_array_equal(sa.random.default_rng(11).random(20000).gather(), u)  # reproducible
    with pytest.raises(ValueError):
        g.integers(5, 5, size=3)
    with pytest.raises(ValueError):
        g.normal(0.0, -1.0, 3)
    with pytest.raises(NotImplementedError, match="seed"):
        sa.random.default_rng()
    with pytest.raises(NotImplementedError, match="size"):
        g.random()
