# examples/python/*.py (cuNumeric's examples as a NumPy user writes them) run twice: as shipped
# (import spmdarray, on the MPI ranks pytest runs under) and with only the import line changed
# back to NumPy/SciPy (serially, on every rank: the reference). The results are compared within
# bounds derived below; every rank computes the same comparison, so all pass or fail alike.
import io
import math
import pathlib
import sys
import tokenize
import types

import numpy as np
import pytest

import spmdarray as sa

pytest.importorskip("scipy.sparse")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"
# the one line that differs, as shipped (spmdarray) and in the NumPy original
LINES = {
    "stencil.py": ("import spmdarray as np", "import numpy as np"),
    "cg.py": ("import spmdarray as np, spmdarray.sparse as sparse  # noqa: E401",
              "import numpy as np, sparse_scipy as sparse  # noqa: E401"),
    "cfd.py": ("import spmdarray as np", "import numpy as np"),
}
EPS = np.finfo(np.float64).eps


def load(name, numpy):
    """The example as a module: as shipped, or with its import line replaced by NumPy's."""
    path = EXAMPLES / name
    src = path.read_text()
    ours, theirs = LINES[name]
    lines = src.splitlines()
    assert lines.count(ours) == 1, f"{name}: the import line {ours!r} is not there exactly once"
    if numpy:
        lines[lines.index(ours)] = theirs
    code = "\n".join(lines) + "\n"
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))  # sparse_scipy, the NumPy side's shim
    mod = types.ModuleType(f"example_{path.stem}_{'numpy' if numpy else 'spmdarray'}")
    mod.__file__ = str(path)
    exec(compile(code, str(path), "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("name", sorted(LINES))
def test_only_the_import_line_names_spmdarray(name):
    """Outside comments and strings, `spmdarray` appears on the import line only: nothing else in
    the program knows which library runs it."""
    src = (EXAMPLES / name).read_text()
    ours = LINES[name][0]
    where = [tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(src).readline)
             if tok.type == tokenize.NAME and tok.string == "spmdarray"]
    line = src.splitlines().index(ours) + 1
    assert where and set(where) == {line}, (name, where, line)
    assert load(name, numpy=True).np is np


def test_stencil_matches_numpy(capsys):
    spmd, ref = load("stencil.py", False), load("stencil.py", True)
    assert spmd.np is sa
    n, iterations = 30, 25
    g, r = spmd.initialize(n), ref.initialize(n)
    mean, mean_ref = spmd.run(g, iterations), ref.run(r, iterations)
    got = np.asarray(g)  # a collective: the whole grid on every rank
    # Both compute each point as 0.2 * ((((c + n) + e) + w) + s) from the old values (spmdarray's
    # fused sum keeps NumPy's order), so they may differ only by rounding that the compiler
    # contracts differently (FMA). An update is a convex combination (weights 0.2, summing to 1),
    # so a difference in the old values does not grow; each update adds at most ~6 roundings of
    # size eps * max|u|. Bound: 8 eps max|u| per iteration.
    # The means add n^2 points in another order (NumPy pairwise, spmdarray per rank then across
    # ranks): at most n^2 eps max|u| more (the classic bound of recursive summation).
    bound = 8 * iterations * EPS * np.abs(r).max()
    np.testing.assert_allclose(got, r, rtol=0, atol=bound)
    assert abs(mean - mean_ref) <= bound + n * n * EPS * np.abs(r).max()
    assert np.abs(r[1:-1, 1:-1]).max() > 0  # the iterations moved the interior (the test can fail)
    out = spmd.main(["-n", "12", "-i", "7"]), ref.main(["-n", "12", "-i", "7"])
    assert abs(out[0] - out[1]) <= (8 * 7 + 12 * 12) * EPS * 273.15
    assert "stencil: 12 x 12, 7 iterations" in capsys.readouterr().out


def test_cfd_matches_numpy(capsys):
    spmd, ref = load("cfd.py", False), load("cfd.py", True)
    assert spmd.np is sa
    nx, ny, nit, steps = 23, 19, 8, 6  # not square: an exchanged axis would show
    # From rest the channel flow stays one-dimensional (v = 0, p = 1): start from a perturbed
    # state instead (apps/cfd's check does the same), through the example's own step().
    y, x = np.meshgrid(np.linspace(0, 2, ny), np.linspace(0, 2, nx), indexing="ij")
    start = (0.1 * np.sin(np.pi * x) * np.sin(np.pi * y / 2), 0.1 * np.cos(np.pi * x) * np.sin(np.pi * y),
             1 + 0.1 * np.cos(np.pi * (x + y)))
    dx, dy = 2 / (nx - 1), 2 / (ny - 1)
    phys = (1, 0.1, 1, 0.0009 * dx * dy / 0.1, dx, dy)  # rho, nu, F, dt, dx, dy as run() sets them
    fields, fields_ref = [spmd.np.array(f) for f in start], [f.copy() for f in start]
    for _ in range(steps):
        fields = spmd.step(*fields, nit, *phys)
        fields_ref = ref.step(*fields_ref, nit, *phys)
    got, want = [np.asarray(f) for f in fields], fields_ref
    # Every point is computed by the same operations in the same order as NumPy's (the fused
    # program keeps the tree's order; x**2 is x*x as in NumPy), so the fields differ only where a
    # compiler contracts a * b + c into one rounding (device builds): a few roundings a step, far
    # below 1e-12 of the field's size after 6 steps (apps/cfd's check uses the same tolerance).
    for name, g, w in zip("uvp", got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * np.abs(w).max(), err_msg=name)
    for w, f in zip(want, start):  # the flow moved (the test can fail)
        assert np.abs(w - f).max() > 1e-4
    rest, rest_ref = [np.asarray(f) for f in spmd.run(nx, ny, nit, steps)], ref.run(nx, ny, nit, steps)
    for g, w in zip(rest, rest_ref):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * np.abs(w).max())
    sums = spmd.main(["--nx", "12", "--ny", "10", "--nit", "3", "--steps", "4"])
    sums_ref = ref.main(["--nx", "12", "--ny", "10", "--nit", "3", "--steps", "4"])
    # the sums add 120 points in another order (per rank, then across ranks): 120 eps max|f| apart
    for s, r, f in zip(sums, sums_ref, ref.run(12, 10, 3, 4)):
        assert abs(s - r) <= 120 * EPS * np.abs(f).max() + 1e-12 * np.abs(f).sum(), (s, r)
    assert "cfd: 10 x 12, nit 3, 4 steps" in capsys.readouterr().out


def lambda_min(n):
    """The smallest eigenvalue of the n x n grid's 5-point matrix (generators.hpp)."""
    return 2 * 2 * (1 - math.cos(math.pi / (n + 1)))


def test_cg_matches_numpy_scipy(rng, capsys):
    spmd, ref = load("cg.py", False), load("cg.py", True)
    assert spmd.np is sa and spmd.sparse is sa.sparse and ref.sparse.__name__ == "sparse_scipy"
    n, rtol = 20, 1e-9
    A, b = spmd.problem(n)
    Ar, br = ref.problem(n)
    # the same matrix: the library's generator and the SciPy shim's kron construction
    assert A.shape == Ar.shape and A.nnz == Ar.nnz
    v = rng.standard_normal(n * n)
    # 5 products by 4 or -1 (exact), summed: at most 4 roundings of at most 8 max|v|
    np.testing.assert_allclose((A @ sa.array(v)).gather(), Ar @ v, rtol=0, atol=32 * EPS * np.abs(v).max())
    np.testing.assert_array_equal(np.asarray(b), br)

    thr = rtol * np.linalg.norm(br)
    x, it = spmd.solve(A, b, 1, 10 * n * n, thr)
    xr, itr = ref.solve(Ar, br, 1, 10 * n * n, thr)
    assert it > 0 and itr > 0
    # The same iteration in exact arithmetic; only the dot products' summation order differs
    # (per rank, then an allreduce), so ||r|| may cross the threshold one iteration apart.
    assert abs(it - itr) <= 1, (it, itr)
    xg = np.asarray(x)
    res, res_r = np.linalg.norm(br - Ar @ xg), np.linalg.norm(br - Ar @ xr)
    # the recursive residual met thr; the true one drifts from it by roundoff (far below thr here)
    assert res <= 2 * thr and res_r <= 2 * thr, (res, res_r, thr)
    # x - xr = A^-1 (r_r - r): at most (||r|| + ||r_r||) / lambda_min(A)
    assert np.linalg.norm(xg - xr) <= (res + res_r) / lambda_min(n) * (1 + 1e-9)

    y, info = spmd.solve_library(A, b, rtol, 10 * n * n)
    yr, info_r = ref.solve_library(Ar, br, rtol, 10 * n * n)
    assert info == 0 and info_r == 0
    yg = np.asarray(y)
    res, res_r = np.linalg.norm(br - Ar @ yg), np.linalg.norm(br - Ar @ yr)
    # ours: the true residual within 1.1 rtol ||b|| (its verdict); SciPy's: its recursive one met
    # rtol ||b||, the true one checked here with the same slack
    assert res <= 1.1 * thr and res_r <= 1.1 * thr, (res, res_r, thr)
    assert np.linalg.norm(yg - yr) <= (res + res_r) / lambda_min(n) * (1 + 1e-9)

    it_m, resid_m, info_m, resid_lib_m = spmd.main(["-n", "10", "--rtol", "1e-8"])
    it_n, resid_n, info_n, resid_lib_n = ref.main(["-n", "10", "--rtol", "1e-8"])
    assert abs(it_m - it_n) <= 1 and info_m == 0 and info_n == 0
    assert resid_m <= 2e-8 and resid_n <= 2e-8 and resid_lib_m <= 1.1e-8 and resid_lib_n <= 1.1e-8
    out = capsys.readouterr().out
    assert "cg loop: 10^2 unknowns, nnz 460" in out and "sparse.linalg.cg: info 0" in out
