import numpy as np
import pytest

import spmdarray as sa


def same_everywhere(msg):
    from mpi4py import MPI
    msgs = MPI.COMM_WORLD.allgather(msg)
    assert all(m == msgs[0] for m in msgs), msgs


def test_library_errors_are_spmdarray_errors_everywhere(comm):
    assert issubclass(sa.Error, RuntimeError)
    with pytest.raises(sa.Error) as e:
        sa.zeros((4, 4), grid=(comm.size + 1, 1))
    assert "spmd::" in str(e.value)
    same_everywhere(str(e.value))
    a = sa.zeros((20,), halo=1)
    with pytest.raises(sa.Error) as e:
        a[2:] = a[:-2] + 1.0  # a shift of 2 through a halo of 1: the C++ rule, on every rank
    assert "halo" in str(e.value)
    same_everywhere(str(e.value))


def test_not_implemented_names_the_function():
    a = sa.ones((6, 4))
    for call, name in ((lambda: np.median(a), "median"), (lambda: np.sort(a), "sort"),
                       (lambda: sa.sum(a, axis=0, dtype=np.float32), "dtype"), (lambda: a[[1, 2]], "list"),
                       (lambda: a @ a, "__matmul__"), (lambda: a // 2, "__floordiv__"),
                       (lambda: np.floor(a), "floor"), (lambda: a + np.ones((6, 4)), "ndarray"),
                       (lambda: a + sa.ones((4,)), "fewer axes"), (lambda: sa.zeros((2, 2), np.complex128), "complex"),
                       (lambda: sa.dot(a, a), "matrix product"), (lambda: a[None], "newaxis")):
        with pytest.raises(NotImplementedError) as e:
            call()
        assert name in str(e.value), str(e.value)


def test_shape_errors_like_numpy():
    a, b = sa.ones((4, 6)), sa.ones((5, 6))
    with pytest.raises(ValueError, match="broadcast"):
        a + b
    with pytest.raises(ValueError, match="broadcast"):
        a[...] = b
