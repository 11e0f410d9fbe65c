# spmdarray.sparse.csr_matrix and spmdarray.linalg.cg against SciPy (the same matrices, built
# serially on every rank from the same seeds: the reference). Every rank passes or fails alike.
import math

import numpy as np
import pytest

import spmdarray as sa
import spmdarray.sparse as ssp

sp = pytest.importorskip("scipy.sparse")
spla = pytest.importorskip("scipy.sparse.linalg")


def same_everywhere(msg):
    from mpi4py import MPI
    msgs = MPI.COMM_WORLD.allgather(msg)
    assert all(m == msgs[0] for m in msgs), msgs


def random_csr(rng, n, m, density=0.3):
    a = sp.random(n, m, density=density, format="csr", random_state=np.random.RandomState(rng.integers(1 << 30)))
    return a


def assert_close(got, ref, scale):
    """|got - ref| <= 1e-13 scale element by element: scale = |A| |x|, the sum of the row's product
    magnitudes; summing a row's n products in any order errs by at most n eps of it (n < 40 here)."""
    err = np.abs(np.asarray(got) - ref)
    assert np.all(err <= 1e-13 * scale), (err.max(), (err / np.maximum(scale, 1e-300)).max())


def scipy_poisson(shape):
    """The N-d Laplacian of spmd::sparse::poisson from its definition (kron sums)."""
    def t(n):
        return sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], shape=(n, n))
    out = None
    for d, n in enumerate(shape):
        term = t(n)
        for e in range(len(shape)):
            if e < d:
                term = sp.kron(sp.identity(shape[e]), term)
            elif e > d:
                term = sp.kron(term, sp.identity(shape[e]))
        out = term if out is None else out + term
    return out.tocsr()


def test_owned_rows_are_a_vectors(comm):
    for n in (0, 1, 5, 17):
        lo, hi = ssp.owned_rows(n)
        d = sa.zeros(n).distribution
        assert (lo, hi) == (d["owned_lo"][0], d["owned_hi"][0])
        # balanced block: the first n % size ranks own one more
        base, extra = divmod(n, comm.size)
        r = comm.rank
        assert lo == r * base + min(r, extra) and hi - lo == base + (r < extra)


@pytest.mark.parametrize("shape", [(23, 23), (17, 9), (6, 30)])
def test_from_scipy_block_matvec(shape, rng, comm):
    g = random_csr(rng, *shape)
    lo, hi = ssp.owned_rows(shape[0])
    A = ssp.csr_matrix(g[lo:hi])
    assert A.shape == shape and A.nnz == g.nnz and A.ndim == 2 and A.dtype == np.float64
    assert A.local_nnz == g[lo:hi].nnz and A.owned_rows == (lo, hi)
    x = rng.standard_normal(shape[1])
    y = A @ sa.array(x)
    assert isinstance(y, sa.ndarray) and y.shape == (shape[0],) and y.dtype == np.float64
    ref = g @ x
    # the same products in another summation order (diagonal and off-diagonal blocks apart)
    assert_close(y.gather(), ref, abs(g) @ np.abs(x))
    assert_close(A.dot(sa.array(x)).gather(), ref, abs(g) @ np.abs(x))


def test_other_block_forms(rng):
    g = random_csr(rng, 11, 7)
    lo, hi = ssp.owned_rows(11)
    blk = g[lo:hi]
    x = rng.standard_normal(7)
    ref = g @ x
    for A in (ssp.csr_matrix((blk.data, blk.indices, blk.indptr), shape=(11, 7)),
              ssp.csr_matrix(blk.toarray()), ssp.csr_matrix(blk.tocoo()), ssp.csr_array(blk, shape=(11, 7))):
        assert A.shape == (11, 7) and A.nnz == g.nnz
        assert_close((A @ sa.array(x)).gather(), ref, abs(g) @ np.abs(x))


def test_duplicates_add_up(comm):
    # every rank's rows: (row, 0) given twice, 1.0 and 2.0: SciPy's sum_duplicates gives 3
    lo, hi = ssp.owned_rows(6)
    n = hi - lo
    indptr = np.arange(0, 2 * n + 1, 2)
    indices = np.zeros(2 * n, dtype=np.int64)
    data = np.tile([1.0, 2.0], n)
    A = ssp.csr_matrix((data, indices, indptr), shape=(6, 3))
    # stored once each (SciPy's sum_duplicates); at 3-4 ranks a rank's diagonal block is 2 x 1 with
    # 4 entries given: cuSPARSE refuses such a block (the GPU build crashed here before)
    assert A.nnz == 6
    np.testing.assert_array_equal((A @ sa.array([1.0, 5.0, 7.0])).gather(), np.full(6, 3.0))


def test_vectors_of_other_layouts_dtypes_views(rng):
    g = random_csr(rng, 19, 19)
    lo, hi = ssp.owned_rows(19)
    A = ssp.csr_matrix(g[lo:hi])
    x = rng.standard_normal(40)
    ref = g @ x[3:41:2][:19]
    big = sa.array(x)
    cases = [big[3:41:2],                         # a strided view: copied onto the columns first
             sa.array(x[3:41:2][:19], halo=2),    # a halo: fits as it is (owned points only)
             sa.array(x[3:41:2][:19]) * 1.0,      # an expression
             sa.array(x[3:41:2][:19]).astype(np.float32)]
    for i, v in enumerate(cases):
        y = (A @ v).gather()
        r = ref if i < 3 else g @ x[3:41:2][:19].astype(np.float32).astype(np.float64)
        assert_close(y, r, abs(g) @ np.abs(x[3:41:2][:19]) + 1e-300)
    ints = sa.arange(19)
    assert_close((A @ ints).gather(), g @ np.arange(19.0), abs(g) @ np.arange(19.0) + 1e-300)


@pytest.mark.parametrize("shape", [(5, 7), (6, 4, 3), (1, 9)])
def test_poisson_is_the_laplacian(shape, rng):
    A = ssp.poisson2d(*shape) if len(shape) == 2 else ssp.poisson3d(*shape)
    ref = scipy_poisson(shape)
    n = int(np.prod(shape))
    assert A.shape == (n, n) and A.nnz == ref.nnz
    # the nnz formula of generators.hpp: N (1 + 2 dim) - 2 sum_d N / n_d
    assert A.nnz == n * (1 + 2 * len(shape)) - 2 * sum(n // e for e in shape)
    x = rng.standard_normal(n)
    assert_close((A @ sa.array(x)).gather(), ref @ x, abs(ref) @ np.abs(x))
    np.testing.assert_array_equal(A.diagonal().gather(), ref.diagonal())


def test_convection_diffusion_is_poisson_at_zero_peclet(rng):
    x = rng.standard_normal(30)
    a0 = ssp.convection_diffusion2d(5, 6, peclet=0.0)
    p = scipy_poisson((5, 6))
    assert_close((a0 @ sa.array(x)).gather(), p @ x, abs(p) @ np.abs(x))
    a1 = ssp.convection_diffusion2d(5, 6, peclet=10.0)
    assert a1.shape == (30, 30) and a1.nnz == a0.nnz
    assert not np.allclose((a1 @ sa.array(x)).gather(), scipy_poisson((5, 6)) @ x)


def test_wrong_rows_refused_everywhere(comm, rng):
    g = random_csr(rng, 10, 10)
    lo, hi = ssp.owned_rows(10)  # rank 0 owns at least 3 rows at 1-4 ranks
    blk = g[lo:hi - 1] if comm.rank == 0 else g[lo:hi]  # rank 0 forgets its last row
    with pytest.raises(sa.Error, match="rank 0's block has") as e:
        ssp.csr_matrix(blk, shape=(10, 10))
    h0 = -(-10 // comm.size)  # rank 0's rows: [0, ceil(10 / size))
    assert f"owns rows [0, {h0}) of 10" in str(e.value) and f"{h0} rows expected" in str(e.value), str(e.value)
    same_everywhere(str(e.value))
    blk = g[lo:hi]
    if comm.rank == comm.size - 1:  # the last rank: one row more
        blk = sp.vstack([blk, g[:1]]).tocsr()
    with pytest.raises(sa.Error, match=f"rank {comm.size - 1}'s block has") as e:
        ssp.csr_matrix(blk, shape=(10, 10))
    same_everywhere(str(e.value))


def test_wrong_columns_refused_everywhere(comm, rng):
    g = random_csr(rng, 8, 8)
    lo, hi = ssp.owned_rows(8)
    blk = g[lo:hi]
    if comm.rank == comm.size - 1:
        blk = sp.hstack([blk, sp.csr_matrix((hi - lo, 1))]).tocsr()
    with pytest.raises(sa.Error, match="columns") as e:
        ssp.csr_matrix(blk, shape=(8, 8))
    same_everywhere(str(e.value))
    if comm.size > 1:
        with pytest.raises(sa.Error, match="different column counts") as e:
            ssp.csr_matrix(blk)
        same_everywhere(str(e.value))
    # a column index out of range on rank 0 only (the library's check): full rows, 8 entries each
    full = sp.csr_matrix(np.ones((8, 8)))[lo:hi]
    idx = full.indices.copy()
    if comm.rank == 0:
        idx[0] = 8
    with pytest.raises(sa.Error, match="column") as e:
        ssp.csr_matrix((full.data, idx, full.indptr), shape=(8, 8))
    same_everywhere(str(e.value))


def test_sparse_not_implemented_names_it(rng):
    A = ssp.poisson2d(3, 3)
    v = sa.ones(9)
    for call, name in ((lambda: A @ A, "two sparse"), (lambda: A.toarray(), "toarray"), (lambda: A[1], "indexing"),
                       (lambda: A @ np.ones(9), "ndarray"), (lambda: A @ sa.ones((9, 2)), "2-D"),
                       (lambda: A * v, "A @ x"), (lambda: np.asarray(A), "NumPy array"),
                       (lambda: ssp.csr_matrix(np.ones((2, 2)), dtype=np.float32), "float32"),
                       (lambda: sa.linalg.cg(A, v, M=np.eye(9)), "M of type ndarray"),
                       (lambda: sa.linalg.cg(A, v, M="ilu"), "M='ilu'"),
                       (lambda: sa.linalg.cg(A, v, callback=print), "callback"),
                       (lambda: sa.linalg.cg(scipy_poisson((3, 3)), v), "csr_matrix only"),
                       (lambda: sa.linalg.cg(A, np.ones(9)), "b of type ndarray"),
                       (lambda: sa.linalg.norm(v, ord=1), "ord=")):
        with pytest.raises(NotImplementedError) as e:
            call()
        assert name in str(e.value), str(e.value)
    with pytest.raises(ValueError, match="dimension mismatch"):
        A @ sa.ones(8)


def lambda_min(shape):
    return sum(2 * (1 - math.cos(math.pi / (n + 1))) for n in shape)


@pytest.mark.parametrize("M", [None, "jacobi"])
def test_cg_against_scipy(M, rng):
    shape = (12, 10)
    n = 120
    A, ref = ssp.poisson2d(*shape), scipy_poisson(shape)
    bn = rng.standard_normal(n)
    rtol = 1e-9
    x, info = sa.linalg.cg(A, sa.array(bn), rtol=rtol, M=M)
    assert info == 0 and isinstance(x, sa.ndarray) and x.shape == (n,)
    xg = x.gather()
    res = np.linalg.norm(bn - ref @ xg)
    assert res <= 1.1 * rtol * np.linalg.norm(bn)  # the library's verdict: the true residual, 10% slack
    tol = "rtol" if "rtol" in __import__("inspect").signature(spla.cg).parameters else "tol"
    xs, info_s = spla.cg(ref, bn, atol=0.0, **{tol: rtol})
    assert info_s == 0
    # both residuals are small, so the solutions differ by at most their sum / lambda_min(A)
    bound = (res + np.linalg.norm(bn - ref @ xs)) / lambda_min(shape)
    assert np.linalg.norm(xg - xs) <= bound * (1 + 1e-6), (np.linalg.norm(xg - xs), bound)


def test_cg_verdict_and_info(rng):
    A, ref = ssp.poisson2d(9, 9), scipy_poisson((9, 9))
    b = sa.array(rng.standard_normal(81))
    x, info, r = sa.linalg.cg(A, b, rtol=1e-10, return_info=True)
    assert info == 0 and r.converged and r.reason == "converged_rtol" and r.info == 0
    assert r.iterations > 0 and len(r.history) == r.iterations + 1
    assert r.true_residual == pytest.approx(np.linalg.norm(b.gather() - ref @ x.gather()), rel=1e-6, abs=1e-14)
    # maxiter exhausted: info = iterations done (> 0), SciPy's convention
    x2, info2, r2 = sa.linalg.cg(A, b, rtol=1e-10, maxiter=3, return_info=True)
    assert info2 == 3 and not r2.converged and r2.reason == "diverged_max_iters" and r2.iterations == 3
    # maxiter 0: not converged, info 1 (info 0 always means converged)
    assert sa.linalg.cg(A, b, maxiter=0)[1] == 1
    # atol: converged_atol
    _, info3, r3 = sa.linalg.cg(A, b, rtol=0.0, atol=1e-6, return_info=True)
    assert info3 == 0 and r3.reason == "converged_atol" and r3.true_residual <= 1.1e-6
    # b = 0: x = 0 without iterating
    x4, info4, r4 = sa.linalg.cg(A, sa.zeros(81), return_info=True)
    assert info4 == 0 and r4.reason == "zero_rhs" and r4.iterations == 0
    np.testing.assert_array_equal(x4.gather(), np.zeros(81))
    # x0: the initial guess (not modified); from the solution itself: converged at once
    x0 = x.copy()
    x5, info5, r5 = sa.linalg.cg(A, b, x0, rtol=1e-8, return_info=True)
    assert info5 == 0 and r5.iterations == 0 and x5 is not x0
    np.testing.assert_array_equal(x0.gather(), x.gather())
    same_everywhere((info, r.iterations, r.residual, info2, info3))


def test_cg_breakdown_is_negative(comm):
    # -A is negative definite: p.Ap < 0 at the first iteration
    lo, hi = ssp.owned_rows(16)
    neg = -scipy_poisson((4, 4))[lo:hi]
    x, info, r = sa.linalg.cg(ssp.csr_matrix(neg), sa.ones(16), return_info=True)
    assert info == -1 and r.reason == "breakdown" and not r.converged and r.detail


def test_cg_jacobi_on_a_scaled_matrix(rng):
    # D A D with a varying diagonal: Jacobi makes it as easy as A; both converge to the same x
    n = 64
    d = np.exp(rng.uniform(-3, 3, n))
    g = (sp.diags(d) @ scipy_poisson((8, 8)) @ sp.diags(d)).tocsr()
    lo, hi = ssp.owned_rows(n)
    A = ssp.csr_matrix(g[lo:hi])
    bn = rng.standard_normal(n)
    _, info_j, rj = sa.linalg.cg(A, sa.array(bn), rtol=1e-8, M="jacobi", return_info=True)
    _, info_n, rn = sa.linalg.cg(A, sa.array(bn), rtol=1e-8, return_info=True)
    assert info_j == 0 and rj.converged
    assert rj.iterations < rn.iterations or info_n != 0, (rj.iterations, rn.iterations)


def test_cg_reproducible_same_bits(rng):
    A = ssp.poisson2d(7, 11)
    b = sa.array(rng.standard_normal(77))
    if sa.device_memory:  # the library's limit on GPUs (docs/api/solvers.md): an error, on every rank
        with pytest.raises(sa.Error, match="reproducible on a GPU is limited to two sums"):
            sa.linalg.cg(A, b, rtol=1e-9, reproducible=True)
        return
    x1, _, r1 = sa.linalg.cg(A, b, rtol=1e-9, reproducible=True, return_info=True)
    x2, _, r2 = sa.linalg.cg(A, b, rtol=1e-9, reproducible=True, return_info=True)
    assert r1.iterations == r2.iterations and r1.residual == r2.residual
    np.testing.assert_array_equal(x1.gather(), x2.gather())


def test_norm_and_scalar_ufuncs(rng):
    x = rng.standard_normal(33)
    assert float(sa.linalg.norm(sa.array(x))) == pytest.approx(np.linalg.norm(x), rel=1e-14)
    assert float(sa.linalg.norm(sa.array(x) * 2.0)) == pytest.approx(2 * np.linalg.norm(x), rel=1e-14)
    assert float(sa.linalg.norm(sa.arange(5))) == pytest.approx(np.linalg.norm(np.arange(5)), rel=1e-15)
    # a scalar's ufunc is NumPy's (the same value on every rank): np.sqrt(rr) in a solver loop
    assert sa.sqrt(2.0) == np.sqrt(2.0) and sa.abs(-3) == 3 and sa.exp(np.float64(1.0)) == np.exp(1.0)


def test_ranks_owning_no_rows(rng, comm):
    # 2 rows: at 3-4 ranks some ranks own none (an empty block, indptr [0]) and still take part
    g = sp.csr_matrix(np.array([[2.0, -1.0], [-1.0, 2.0]]))
    lo, hi = ssp.owned_rows(2)
    A = ssp.csr_matrix(g[lo:hi])
    assert A.shape == (2, 2) and A.nnz == 4 and A.local_nnz == 2 * (hi - lo)
    assert_close((A @ sa.array([1.0, 3.0])).gather(), np.array([-1.0, 5.0]), np.array([5.0, 7.0]))
    x, info = sa.linalg.cg(A, sa.array([1.0, 1.0]), rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose(x.gather(), [1.0, 1.0], rtol=1e-12)


def test_cg_inputs(rng):
    A, ref = ssp.poisson2d(6, 5), scipy_poisson((6, 5))
    bn = rng.standard_normal(30)
    big = sa.array(np.repeat(bn, 2))
    # b as a strided view and as an expression, x0 as a view: copied onto the rows' layout
    for b in (big[::2], sa.array(bn) * 1.0):
        x, info = sa.linalg.cg(A, b, x0=sa.ones(60)[1::2], rtol=1e-10)
        assert info == 0
        assert np.linalg.norm(bn - ref @ x.gather()) <= 1.1e-10 * np.linalg.norm(bn)
    with pytest.raises(ValueError, match="shape"):
        sa.linalg.cg(A, sa.ones(29))
    with pytest.raises(ValueError, match="square"):
        sa.linalg.cg(ssp.csr_matrix(sp.csr_matrix(np.ones((4, 3)))[slice(*ssp.owned_rows(4))]), sa.ones(4))
    with pytest.raises(ValueError, match="rtol"):
        sa.linalg.cg(A, sa.ones(30), rtol=-1.0)
    # a NaN in b: the library's nan_or_inf, info -2
    bad = sa.array(np.where(np.arange(30) == 7, np.nan, bn))
    _, info, r = sa.linalg.cg(A, bad, return_info=True)
    assert info == -2 and r.reason == "nan_or_inf" and not r.converged
