"""What the PETSc peers (petsc_cg.py, petsc_krylov.py) share: apps/cg_solver's problems assembled
in PETSc exactly as spmd::sparse builds them, and cg_solver's right side.

The matrices (include/spmd/sparse/generators.hpp): unknown k of an n_0 x ... x n_{D-1} grid is
row-major (last axis fastest); row k holds, in increasing column order, the minus neighbours
(from the largest stride down), the diagonal, the plus neighbours (from the smallest stride up),
neighbours outside the grid omitted.
  * poisson (D = 2, 3): diagonal 2 D, every neighbour -1;
  * convection_diffusion2d (D = 2, Peclet number pe): c_d = pe / sqrt(2) / (n_d + 1), diagonal
    4 + c_0 + c_1, minus neighbour along axis d -1 - c_d, plus neighbours -1.
Rows are owned in PETSc's default balanced blocks (PetscSplitOwnership: the first N mod p ranks
own one row more), which is spmd::Distribution<1>'s split too.
"""
import argparse

import numpy as np


def stencil_matrix(PETSc, comm, shape, peclet=None):
    """The MATMPIAIJ of sparse::poisson (peclet None) or sparse::convection_diffusion2d on `shape`."""
    shape = [int(s) for s in shape]
    dim = len(shape)
    if peclet is not None and dim != 2:
        raise ValueError("convection_diffusion2d is 2-D")
    total = int(np.prod(shape))
    strides = [int(np.prod(shape[d + 1:])) for d in range(dim)]
    layout = PETSc.Vec().createMPI(total, comm=comm)
    lo, hi = layout.getOwnershipRange()
    layout.destroy()
    k = np.arange(lo, hi, dtype=np.int64)
    coord = [(k // strides[d]) % shape[d] for d in range(dim)]
    c = [0.0] * dim
    if peclet is not None:
        w = 1.0 / np.sqrt(2.0)
        c = [peclet * w / (shape[d] + 1) for d in range(dim)]
    # columns in increasing order: minus neighbours by decreasing stride, diagonal, plus neighbours
    offsets, inside, values = [], [], []
    for d in range(dim):
        offsets.append(-strides[d])
        inside.append(coord[d] > 0)
        values.append(-1.0 - c[d])
    offsets.append(0)
    inside.append(np.ones_like(k, dtype=bool))
    values.append(2.0 * dim + sum(c))
    for d in reversed(range(dim)):
        offsets.append(strides[d])
        inside.append(coord[d] + 1 < shape[d])
        values.append(-1.0)
    inside = np.stack(inside, axis=1)
    cols = (k[:, None] + np.array(offsets, dtype=np.int64)[None, :])[inside]
    vals = np.broadcast_to(np.array(values), inside.shape)[inside]
    indptr = np.concatenate([[0], np.cumsum(inside.sum(axis=1))])
    A = PETSc.Mat().createAIJ([(hi - lo, total), (hi - lo, total)],
                              csr=(indptr.astype(PETSc.IntType), cols.astype(PETSc.IntType),
                                   vals.astype(PETSc.ScalarType)), comm=comm)
    A.assemble()
    return A, lo, hi


def splitmix(k):
    """cg_solver's known solution: a value in [-1, 1) from the unknown's index (uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        z = k.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 4503599627370496.0) - 1.0


def known_rhs(A, lo, hi):
    """(u*, b = A u*): cg_solver's right side for the generated problems."""
    ustar, b = A.createVecs()
    ustar.setArray(splitmix(np.arange(lo, hi)))
    A.mult(ustar, b)
    return ustar, b


def true_relative_residual(A, b, x):
    """||b - A x|| / ||b||."""
    r = b.duplicate()
    A.mult(x, r)
    r.aypx(-1.0, b)  # r = b - A x
    rel = r.norm() / b.norm()
    r.destroy()
    return rel


def destroy(PETSc, *objects):
    """Destroy `objects` now, in this order on every rank (collective), so that nothing is left to
    petsc4py's deferred destruction at exit."""
    for o in objects:
        o.destroy()


def arguments(n_default):
    """The options both peers take: --n, --tol, --max-iters, --json (add more to the parser)."""
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=n_default)
    p.add_argument("--tol", type=float, default=1e-8)
    p.add_argument("--max-iters", type=int, default=5000)
    p.add_argument("--json", default="")
    return p
