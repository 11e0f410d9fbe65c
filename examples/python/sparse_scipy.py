"""The NumPy/SciPy side of examples/python/cg.py: scipy.sparse, plus what spmdarray.sparse has
and SciPy lacks, so that the example's NumPy version differs from its spmdarray version only in
its import line (`import numpy as np, sparse_scipy as sparse`):

  poisson2d(nx, ny)  the 5-point Laplacian as spmdarray.sparse.poisson2d (spmd::sparse::poisson2d)
                     builds it: unknown k = i * ny + j, 4 on the diagonal, -1 per grid neighbour,
                     CSR; here from scipy.sparse.kron (serial, the whole matrix);
  linalg.cg          scipy.sparse.linalg.cg taking SciPy >= 1.12's rtol= also on older SciPy
                     (Debian 12's 1.10 calls it tol); every other linalg name is SciPy's.
"""

import inspect
import types

import numpy as np
import scipy.sparse as _sp
import scipy.sparse.linalg as _spla
from scipy.sparse import *  # noqa: F401,F403  (the rest of scipy.sparse, by its own names)


def poisson2d(nx, ny=None):
    """The 5-point Laplacian on an nx x ny grid of unknowns (homogeneous Dirichlet), CSR."""
    ny = nx if ny is None else ny

    def second_difference(n):
        return _sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], shape=(n, n))

    return (_sp.kron(_sp.identity(nx), second_difference(ny)) +
            _sp.kron(second_difference(nx), _sp.identity(ny))).tocsr()


_RTOL = "rtol" in inspect.signature(_spla.cg).parameters


def _cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    if _RTOL:
        return _spla.cg(A, b, x0, rtol=rtol, atol=atol, maxiter=maxiter, M=M, callback=callback)
    return _spla.cg(A, b, x0, tol=rtol, atol=atol, maxiter=maxiter, M=M, callback=callback)


linalg = types.ModuleType("sparse_scipy.linalg", "scipy.sparse.linalg with an rtol-taking cg")
linalg.__dict__.update({k: v for k, v in vars(_spla).items() if not k.startswith("__")})
linalg.cg = _cg
