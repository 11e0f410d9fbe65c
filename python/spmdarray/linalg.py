"""spmdarray.linalg: the library's Krylov solver for spmdarray.sparse matrices (SciPy's
scipy.sparse.linalg.cg signature and return convention) and NumPy's vector norm.

``cg(A, b)`` runs spmd::solvers::cg (include/spmd/solvers/cg.hpp) on the matrix's own
distribution: Collective over A's communicator, every rank gets the same x, info and verdict.
``info`` is decided by the library's verdict, which checks a claimed convergence on the true
residual ``||b - A x||`` (SciPy trusts the recursively updated one). See docs/python.md.
"""

import math
import numbers
from dataclasses import dataclass, field
from typing import List

import numpy as np

from . import _core, _expr
from ._expr import Expr
from . import ndarray, zeros, sum as _sum

__all__ = ["cg", "CGResult", "norm"]

_INT_MAX = 2 ** 31 - 1


@dataclass(frozen=True)
class CGResult:
    """The library's verdict on a solve (spmd::solvers::SolveResult), the same on every rank.

    converged: the true residual met the tolerance; reason: "converged_rtol", "converged_atol",
    "zero_rhs" (b = 0: x = 0, no iteration), "diverged_max_iters", "breakdown" (p.Ap <= 0 or
    another non-positive denominator: A or M not positive definite; ``detail`` says which),
    "nan_or_inf", "residual_mismatch" (the recursive residual met the tolerance, the true one did
    not: ``detail``); iterations; residual (the recursive ||r||); true_residual (||b - A x||,
    computed from the returned x); info (what cg returned); history (||r|| per iteration)."""
    converged: bool
    reason: str
    iterations: int
    residual: float
    true_residual: float
    info: int
    detail: str = ""
    history: List[float] = field(default_factory=list)


_BREAKDOWN = {"breakdown": -1, "nan_or_inf": -2}


def _info(r):
    """SciPy's info from the library's verdict: 0 converged (the true residual meets the
    tolerance); > 0 not converged: the iterations done (at least 1, so that info == 0 always
    means converged, also for maxiter=0); < 0 a breakdown (-1: a non-positive denominator,
    -2: a NaN or infinity)."""
    if r["converged"]:
        return 0
    if r["reason"] in _BREAKDOWN:
        return _BREAKDOWN[r["reason"]]
    return max(int(r["iterations"]), 1)  # diverged_max_iters, residual_mismatch


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, return_info=False,
       reproducible=False):
    """Solve A x = b for a symmetric positive definite spmdarray.sparse matrix A by conjugate
    gradients (spmd::solvers::cg): SciPy's ``scipy.sparse.linalg.cg`` signature and return.

    b: a 1-D spmdarray vector (or expression) of length A.shape[0]; x0: the initial guess
    (default zeros; not modified). Stops when ``||r|| <= max(rtol * ||b||, atol)`` (SciPy's rule)
    or after maxiter iterations (default 10 * n, SciPy's). M: None or "jacobi" (the inverse of
    A's diagonal, applied inside the library's fused update); anything else - a matrix, a
    LinearOperator, another name - raises NotImplementedError naming it. callback: None only.
    reproducible: bitwise-reproducible dot products and norms (SolverOptions::reproducible).

    Returns ``(x, info)``: x a new float64 vector on A's row distribution; info 0 converged, > 0
    not converged (the iterations done), < 0 breakdown (see CGResult). The library decides
    convergence on the true residual ``||b - A x||`` (within 10%: SolverOptions::residual_slack),
    not only on the recursive one as SciPy does. With ``return_info=True``: ``(x, info,
    CGResult)``, the whole verdict. Collective over A's communicator."""
    from .sparse import csr_matrix  # spmdarray.sparse imports this module
    fn = "spmdarray.linalg.cg"
    if not isinstance(A, csr_matrix):
        raise NotImplementedError(f"{fn}: A of type {type(A).__name__} (spmdarray.sparse.csr_matrix only; "
                                  "LinearOperators and dense matrices are not bound)")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{fn}: A must be square ({A.shape} given)")
    n = A.shape[0]
    jacobi = _precond(fn, M)
    if callback is not None:
        raise NotImplementedError(f"{fn}: callback= (the iterations run inside the library; return_info=True "
                                  "gives the residual history)")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (numbers.Real, np.floating)) or not v >= 0:
            raise ValueError(f"{fn}: {name} must be a number >= 0 ({v!r} given)")
    if maxiter is None:
        maxiter = 10 * n
    maxiter = int(maxiter)
    if maxiter < 0:
        raise ValueError(f"{fn}: maxiter must not be negative ({maxiter} given)")
    maxiter = min(maxiter, _INT_MAX)
    bh = A._on_rows(_vector(fn, "b", b, n))
    x = zeros(n, comm=A.comm, label="spmdarray.linalg.cg.x")
    if x0 is not None:
        x[...] = _vector(fn, "x0", x0, n)
    r = _core.csr_cg(A._m, bh, x._h, float(rtol), float(atol), maxiter, jacobi, bool(reproducible),
                     bool(return_info))
    info = _info(r)
    if not return_info:
        return x, info
    return x, info, CGResult(converged=bool(r["converged"]), reason=r["reason"], iterations=int(r["iterations"]),
                             residual=float(r["residual"]), true_residual=float(r["true_residual"]), info=info,
                             detail=r["detail"], history=list(r["history"]))


def _precond(fn, M):
    if M is None:
        return False
    if isinstance(M, str):
        if M.lower() == "jacobi":
            return True
        raise NotImplementedError(f"{fn}: M={M!r} (bound: None or 'jacobi'; the library's Chebyshev, ILU(0) "
                                  "and multigrid preconditioners are not bound yet)")
    raise NotImplementedError(f"{fn}: M of type {type(M).__name__} (a preconditioner matrix or LinearOperator is not "
                              "bound: M=None or M='jacobi')")


def _vector(fn, what, v, n):
    if not isinstance(v, (ndarray, Expr)):
        raise NotImplementedError(f"{fn}: {what} of type {type(v).__name__} (a 1-D spmdarray vector; "
                                  "spmdarray.array(v) distributes a NumPy array)")
    if v.ndim != 1 or v.shape[0] != n:
        raise ValueError(f"{fn}: {what} has shape {v.shape}, the matrix needs ({n},)")
    if v.dtype.kind == "c":
        raise NotImplementedError(f"{fn}: complex {what}")
    return v


def norm(x, ord=None, axis=None, keepdims=False):
    """NumPy's norm for ord=None and axis=None: the 2-norm of the flattened array (a vector's
    2-norm, a matrix's Frobenius norm), one fused pass and one allreduce. Collective. Other ord
    or axis raise NotImplementedError."""
    if ord is not None or axis is not None or keepdims:
        raise NotImplementedError("spmdarray.linalg.norm with ord=, axis= or keepdims= (bound: the 2-norm of the "
                                  "whole array)")
    if not isinstance(x, (ndarray, Expr)):
        raise NotImplementedError(f"spmdarray.linalg.norm of a {type(x).__name__} (spmdarray arrays only)")
    t = x.dtype.type if x.dtype.kind == "f" else np.float64
    xf = x if x.dtype.kind == "f" else _expr.make("mul", x, 1.0)  # NumPy's norm of integers is float64
    return t(math.sqrt(float(_sum(_expr.make("mul", xf, xf)))))
