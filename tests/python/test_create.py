import numpy as np
import pytest

import spmdarray as sa
from conftest import data

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]
SHAPES = [(13,), (7, 5), (3, 4, 5)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_zeros_ones_full(shape, dtype):
    for make, ref in ((sa.zeros, np.zeros), (sa.ones, np.ones)):
        a = make(shape, dtype)
        assert a.shape == shape and a.dtype == np.dtype(dtype) and a.ndim == len(shape)
        assert a.size == int(np.prod(shape))
        np.testing.assert_array_equal(np.asarray(a), ref(shape, dtype))
    v = np.dtype(dtype).type(3)
    np.testing.assert_array_equal(sa.full(shape, v, dtype).gather(), np.full(shape, v, dtype))
    e = sa.empty(shape, dtype)
    assert e.shape == shape and e.dtype == np.dtype(dtype)


def test_full_dtype_from_value():
    assert sa.full((4,), 3).dtype == np.full((4,), 3).dtype
    assert sa.full((4,), 2.5).dtype == np.float64
    assert sa.full((4,), True).dtype == np.bool_
    big = 2**60 + 1
    np.testing.assert_array_equal(sa.full((5,), big).gather(), np.full((5,), big))


@pytest.mark.parametrize("args", [(10,), (2, 11), (3, 20, 4), (10, 0, -3), (0.0, 1.0, 0.125), (5, 2), (-2.5, 3.0, 0.5)])
def test_arange(args):
    a = sa.arange(*args)
    r = np.arange(*args)
    assert a.dtype == r.dtype and a.shape == r.shape
    np.testing.assert_array_equal(a.gather(), r)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_array_roundtrip_and_astype(rng, shape, dtype):
    x = data(rng, shape, dtype)
    a = sa.array(x)
    np.testing.assert_array_equal(a.gather(), x)
    for to in DTYPES:
        b = a.astype(to)
        assert b.dtype == np.dtype(to)
        np.testing.assert_array_equal(b.gather(), x.astype(to))
        c = a[::-1].astype(to)  # a view: copied, then converted
        np.testing.assert_array_equal(c.gather(), x[::-1].astype(to))


def test_distribution_options(comm):
    a = sa.zeros((12, 6), halo=1, grid=(comm.size, 1), periodic=(True, False), label="u")
    d = a.distribution
    assert d["halo"] == [1, 1] and d["grid"] == [comm.size, 1] and d["periodic"] == [True, False]
    assert d["label"] == "u"
    rows = comm.to_mpi4py().allgather((d["owned_lo"][0], d["owned_hi"][0]))
    assert sorted(rows)[0][0] == 0 and sorted(rows)[-1][1] == 12
    assert sum(hi - lo for lo, hi in rows) == 12
    np.testing.assert_array_equal(a.gather(), np.zeros((12, 6)))


def test_comm_mpi4py():
    from mpi4py import MPI
    w = MPI.COMM_WORLD
    c = sa.Comm()
    assert c.rank == w.Get_rank() and c.size == w.Get_size()
    # one MPI in the process: mpi4py's library is the extension's (MPICH here, Open MPI on the GPU image)
    assert MPI.Get_library_version().splitlines()[0] == sa._core.mpi_library_version().splitlines()[0]
    assert "MPICH" in MPI.Get_library_version() or "Open MPI" in MPI.Get_library_version()
    # a split communicator: arrays on it, and back to mpi4py
    sub = w.Split(w.Get_rank() % 2, w.Get_rank())
    s = sa.Comm.from_mpi4py(sub)
    assert s.size == sub.Get_size() and s.rank == sub.Get_rank()
    back = s.to_mpi4py()
    assert back.Get_size() == sub.Get_size()
    assert back.allreduce(1) == sub.Get_size()
    a = sa.arange(10.0, comm=s)
    assert a.comm == a.comm and a.comm.size == sub.Get_size()
    np.testing.assert_array_equal(a.gather(), np.arange(10.0))
    assert sa.sum(a) == np.arange(10.0).sum()
    sub.Free()


def test_repr_and_truth_do_not_communicate():
    a = sa.zeros((3, 4))
    assert "shape=(3, 4)" in repr(a)
    with pytest.raises(ValueError):
        bool(a)
    with pytest.raises(ValueError):
        bool(a > 0)
