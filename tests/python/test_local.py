# a.local (the rank's owned block, zero-copy) and from_local.
import numpy as np
import pytest

import spmdarray as sa
from conftest import data, host


def block(x, a):
    d = a.distribution
    return x[tuple(slice(lo, hi) for lo, hi in zip(d["owned_lo"], d["owned_hi"]))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(13,), (7, 5), (3, 4, 5)])
def test_local_is_the_owned_block(shape, dtype, rng):
    x = data(rng, shape, dtype)
    a = sa.array(x, halo=1)
    loc = a.local
    # a NumPy array over host memory; on a device build a CuPy array over the GPU's
    assert isinstance(loc, np.ndarray) != sa.device_memory and loc.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(host(loc), block(x, a))
    b = sa.from_local(loc, like=a)
    assert b.shape == a.shape and b.dtype == a.dtype and b.distribution == a.distribution
    np.testing.assert_array_equal(b.gather(), x)


def test_local_writes_through(rng):
    x = data(rng, (12, 9), np.float64)
    a = sa.array(x, halo=1)
    a.local[...] *= 2.0  # every rank its own block: no copy
    np.testing.assert_array_equal(a.gather(), 2.0 * x)
    b = sa.zeros((12, 9))
    b[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1]  # reads the halo: refilled after the write
    ref = np.zeros((12, 9))
    ref[1:-1, 1:-1] = 2.0 * (x[:-2, 1:-1] + x[2:, 1:-1])
    np.testing.assert_array_equal(b.gather(), ref)
    c = sa.from_local(a.local + 1.0, like=a, dtype=np.float32)
    np.testing.assert_array_equal(c.gather(), (2.0 * x + 1.0).astype(np.float32))


def test_from_local_shape_agreed(comm):
    a = sa.ones((10, 4))
    blk = a.local
    bad = np.zeros((blk.shape[0] + 1, 4)) if comm.rank == 0 else np.zeros(blk.shape)
    with pytest.raises(ValueError, match="another shape"):
        sa.from_local(bad, like=a)
    with pytest.raises(NotImplementedError, match="view"):
        a[1:].local
