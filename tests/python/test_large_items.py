# Boxes large enough for the engine's several-points-a-device-item forms (impl::BoxItems:
# >= 2^18 points on a rank; the column form for rows of >= 32 points, else items of 4 points a
# box quarter apart), whose extents are no multiple of 4, so that whole items (the device
# interpreter's ProgPoint::values<4>) and partial ones (point by point) both occur. On a host
# build these run the chunked host interpreter; on a device build they are the tests of the
# 4-points-together path. Every result is compared with NumPy's on the same data; shifted reads
# of arrays without a halo (read in place along an axis the process grid does not split, moved
# along one it splits) are checked at every rank count.
import numpy as np
import pytest

import spmdarray as sa
from conftest import data

N1 = (1 << 20) + 5  # 1-D: >= 2^18 points a rank at 1-4 ranks
N2 = (1030, 517)  # 2-D: >= 2^18 points a rank at 1-2 ranks, rows >= 32, 1030 = 4 * 257 + 2


def close(out, ref, rtol=1e-13):
    np.testing.assert_allclose(out.gather() if isinstance(out, sa.ndarray) else out, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_one_axis_programs(rng, dtype):
    xs = [data(rng, (N1,), dtype) for _ in range(5)]
    a = [sa.array(x) for x in xs]
    out = sa.zeros((N1,), dtype)
    if np.dtype(dtype).kind == "f":
        out[...] = 0.2 * (a[0] + a[1] - a[2]) * a[3] - a[4] / 3.0
        ref = 0.2 * (xs[0] + xs[1] - xs[2]) * xs[3] - xs[4] / 3.0
        close(out, ref)
        out[...] = sa.where(a[0] > a[1], sa.sqrt(sa.abs(a[2])), -a[3])
        close(out, np.where(xs[0] > xs[1], np.sqrt(np.abs(xs[2])), -xs[3]))
        close(sa.sum(a[0] * a[1] - a[2]), np.sum(xs[0] * xs[1] - xs[2]), rtol=1e-9)
    else:
        out[...] = 3 * (a[0] + a[1] - a[2]) * a[3] - a[4]
        np.testing.assert_array_equal(out.gather(), 3 * (xs[0] + xs[1] - xs[2]) * xs[3] - xs[4])
        assert int(sa.sum(a[0] * a[1] - a[2])) == int(np.sum(xs[0].astype(np.int64) * xs[1] - xs[2]))
    # shifted along the one axis (no halo: in place at one rank, moved otherwise), strided
    ref = out.gather()
    out[1:-1] = a[0][2:] + a[0][:-2] - 2 * a[1][1:-1]
    ref[1:-1] = xs[0][2:] + xs[0][:-2] - 2 * xs[1][1:-1]
    close(out, ref) if np.dtype(dtype).kind == "f" else np.testing.assert_array_equal(out.gather(), ref)
    out[::3] = a[2][::3] * a[3][::3]
    ref[::3] = xs[2][::3] * xs[3][::3]
    close(out, ref) if np.dtype(dtype).kind == "f" else np.testing.assert_array_equal(out.gather(), ref)


def test_two_axis_stencil_forms(rng):
    g = data(rng, N2, np.float64)
    b = data(rng, N2, np.float64)
    ga, ba = sa.array(g), sa.array(b)
    IN, LO, HI = slice(1, -1), slice(0, -2), slice(2, None)
    # double buffer: another destination
    out = sa.zeros(N2)
    out[IN, IN] = 0.2 * (ga[IN, IN] + ga[LO, IN] + ga[HI, IN] + ga[IN, LO] + ga[IN, HI]) - ba[IN, IN] / 7.0
    ref = np.zeros(N2)
    ref[IN, IN] = 0.2 * (g[IN, IN] + g[LO, IN] + g[HI, IN] + g[IN, LO] + g[IN, HI]) - b[IN, IN] / 7.0
    close(out, ref)
    # in place (NumPy: the right side first), and the periodic-style columns of a dropped axis
    ga[IN, IN] = 0.2 * (ga[IN, IN] + ga[LO, IN] + ga[HI, IN] + ga[IN, LO] + ga[IN, HI])
    g[IN, IN] = 0.2 * (g[IN, IN] + g[LO, IN] + g[HI, IN] + g[IN, LO] + g[IN, HI])
    close(ga, g)
    ga[IN, -1] = ga[IN, -2] + ga[IN, 0] * ba[HI, 0]
    g[IN, -1] = g[IN, -2] + g[IN, 0] * b[HI, 0]
    close(ga, g)
    # reductions of a program over the large box (the column form's fold)
    close(sa.sum(ga * ba - 1.0), np.sum(g * b - 1.0), rtol=1e-9)
    assert float(sa.max(ga[IN, IN] - ba[LO, HI])) == np.max(g[IN, IN] - b[LO, HI])
