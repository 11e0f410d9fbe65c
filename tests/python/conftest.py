# pytest under mpiexec: every rank runs every test (each test is collective). Checks compare data
# gathered onto every rank (the same everywhere) with NumPy computed here, so every rank passes or
# fails alike and no rank is left waiting in a collective.
import numpy as np
import pytest

import spmdarray as sa


@pytest.fixture
def comm():
    return sa.Comm()


@pytest.fixture
def rng():
    return np.random.default_rng(20261127)  # the same numbers on every rank


def data(rng, shape, dtype):
    d = np.dtype(dtype)
    if d.kind == "f":
        return (rng.standard_normal(shape) * 4).astype(d)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-50, 50, shape).astype(d)


def host(x):
    """A block from a.local as NumPy: itself on a host build, a copy of CuPy's on a device build."""
    return x if isinstance(x, np.ndarray) else x.get()
