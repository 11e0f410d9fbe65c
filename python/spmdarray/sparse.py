"""spmdarray.sparse: distributed CSR matrices (the library's spmd::sparse::CsrMatrix).

Rows are distributed as a 1-D spmdarray vector of the same length is: balanced blocks over the
communicator's ranks in rank order (the first ``n % size`` ranks own one row more);
``owned_rows(n)`` gives this rank's ``[lo, hi)``. ``A @ x`` takes a 1-D vector laid out as the
columns (``zeros(A.shape[1])``'s layout: any other vector is moved there first) and gives one laid
out as the rows. Only float64 matrices.

Build one from this rank's own rows (a SciPy CSR block: ``csr_matrix(S_global[lo:hi])``), or from
the library's generators (``poisson2d``, ``poisson3d``, ``convection_diffusion2d``: each rank makes
only its rows). Every constructor is Collective; errors (a block of the wrong rows or columns on
any rank) are spmdarray.Error on every rank. See docs/python.md.

``spmdarray.sparse.linalg`` is ``spmdarray.linalg`` (``cg``), so code written against
``scipy.sparse`` as ``sparse.linalg.cg(A, b)`` runs with ``import spmdarray.sparse as sparse``.
"""

import numbers

import numpy as np

from . import _core
from ._expr import Expr
from . import Comm, ndarray, zeros, Error

__all__ = ["csr_matrix", "csr_array", "owned_rows", "poisson2d", "poisson3d", "convection_diffusion2d", "issparse",
           "isspmatrix_csr", "linalg"]

_LOCAL_INDEX = np.int64


def owned_rows(n, comm=None):
    """This rank's rows [lo, hi) of a matrix of n rows (the owned range of a 1-D spmdarray vector
    of length n). Collective (it builds the distribution)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"spmdarray.sparse.owned_rows: a negative length {n}")
    comm = comm or Comm()
    return tuple(_core.owned_rows(comm._c, n))


class csr_matrix:
    """A distributed sparse matrix in CSR form (float64), rows distributed as a 1-D vector's.

    ``csr_matrix(block, shape=None, *, comm=None, label=None)``: block is this rank's own rows
    ``[lo, hi)`` (``owned_rows(shape[0])``) with global column indices: a SciPy sparse matrix or
    array (converted with ``.tocsr()``), a dense 2-D NumPy array, or SciPy's tuple
    ``(data, indices, indptr)`` (then shape is needed for the column count). ``shape`` (N, M):
    default N = the sum of the ranks' block rows, M = the blocks' column count. Repeated
    (row, column) entries add up, as SciPy's sum_duplicates. Collective: a block holding other
    rows than the rank owns, a column count that differs between ranks or from shape[1], a column
    out of range, are an spmdarray.Error on every rank naming the rank and the rows it owns.
    """

    __slots__ = ("_m", "_comm", "_info")
    __array_priority__ = 20  # NumPy defers @ to us
    format = "csr"
    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, block, shape=None, *, comm=None, label=None, dtype=None):
        if isinstance(block, _core.CsrMatrix):  # from a generator (internal)
            self._adopt(block, comm)
            return
        if dtype is not None and np.dtype(dtype) != np.float64:
            raise NotImplementedError(f"spmdarray.sparse.csr_matrix: dtype {np.dtype(dtype)} (float64 only)")
        comm = comm or Comm()
        nrows, ncols = (-1, -1) if shape is None else _shape2(shape)
        if isinstance(block, tuple):
            if len(block) != 3:
                raise NotImplementedError("spmdarray.sparse.csr_matrix: a tuple block is SciPy's (data, indices, "
                                          "indptr); the (data, (row, col)) and (M, N) forms are not bound")
            if shape is None:
                raise ValueError("spmdarray.sparse.csr_matrix: (data, indices, indptr) needs shape= (the column "
                                 "count)")
            data, indices, indptr = (np.asarray(v) for v in block)
            block_cols = ncols
        elif hasattr(block, "tocsr"):  # SciPy sparse
            b = block.tocsr()
            data, indices, indptr = b.data, b.indices, b.indptr
            block_cols = int(b.shape[1])
        elif isinstance(block, (ndarray, Expr)):
            raise NotImplementedError("spmdarray.sparse.csr_matrix of a distributed spmdarray array (pass this "
                                      "rank's rows as a SciPy or NumPy block)")
        else:
            d = np.asarray(block)
            if d.ndim != 2:
                raise ValueError(f"spmdarray.sparse.csr_matrix: a dense block must be 2-D ({d.ndim}-D given)")
            rows, cols = np.nonzero(d)
            data, indices = d[rows, cols], cols
            indptr = np.zeros(d.shape[0] + 1, dtype=_LOCAL_INDEX)
            np.cumsum(np.bincount(rows, minlength=d.shape[0]), out=indptr[1:])
            block_cols = int(d.shape[1])
        if np.iscomplexobj(data):
            raise NotImplementedError("spmdarray.sparse.csr_matrix: complex matrices (float64 only)")
        if len(indptr) < 1:
            raise ValueError("spmdarray.sparse.csr_matrix: indptr needs at least one entry")
        m = _core.csr_from_local(comm._c, nrows, ncols, block_cols,
                                 np.ascontiguousarray(indptr, dtype=_LOCAL_INDEX),
                                 np.ascontiguousarray(indices, dtype=_LOCAL_INDEX),
                                 np.ascontiguousarray(data, dtype=np.float64), label or "")
        self._adopt(m, comm)

    def _adopt(self, m, comm):
        self._m = m
        self._comm = comm or Comm(m.comm())
        self._info = m.info()

    # -- queries (Local: the counts were agreed at construction) --
    @property
    def shape(self):
        """(rows, columns), global. Local."""
        return (self._info["rows"], self._info["cols"])

    @property
    def nnz(self):
        """The global number of stored entries (agreed over the ranks at construction, so reading
        it communicates nothing). Local."""
        return self._info["nnz"]

    @property
    def local_nnz(self):
        """The entries of this rank's rows. Local."""
        return self._info["local_nnz"]

    @property
    def owned_rows(self):
        """This rank's rows [lo, hi). Local."""
        return (self._info["row_lo"], self._info["row_hi"])

    @property
    def comm(self):
        return self._comm

    @property
    def label(self):
        return self._info["label"]

    def __repr__(self):
        return f"spmdarray.sparse.csr_matrix(shape={self.shape}, nnz={self.nnz}, dtype=float64)"

    # -- products --
    def dot(self, x):
        """A @ x for a 1-D spmdarray vector (or expression) of length shape[1]: a new float64 vector
        laid out as the rows. x of another layout, dtype or a view is first copied onto the
        columns' layout (one more pass). Neighbour-collective (plus the copy's collective)."""
        if isinstance(x, csr_matrix):
            raise NotImplementedError("spmdarray.sparse: the product of two sparse matrices")
        if not isinstance(x, (ndarray, Expr)):
            raise NotImplementedError(f"spmdarray.sparse.csr_matrix @ {type(x).__name__} (spmdarray vectors only; "
                                      "spmdarray.array(x) distributes a NumPy array)")
        if x.ndim != 1:
            raise NotImplementedError(f"spmdarray.sparse.csr_matrix @ a {x.ndim}-D operand (1-D vectors only)")
        if x.shape[0] != self.shape[1]:
            raise ValueError(f"dimension mismatch: matrix {self.shape} @ vector {x.shape}")
        return ndarray(self._m.matvec(self._on_columns(x)))

    def __matmul__(self, x):
        return self.dot(x)

    def __rmatmul__(self, x):
        raise NotImplementedError("spmdarray.sparse: x @ A (a vector times a matrix: A.T is not bound)")

    def __mul__(self, x):
        raise NotImplementedError("spmdarray.sparse.csr_matrix * x (use A @ x or A.dot(x): SciPy's * is being "
                                  "retired for matrix products)")

    __rmul__ = __mul__

    def diagonal(self):
        """A(i, i) as a new 1-D float64 vector on the rows (0 where a row stores none). Local."""
        if self.shape[0] != self.shape[1]:
            raise NotImplementedError("spmdarray.sparse.csr_matrix.diagonal of a non-square matrix")
        return ndarray(self._m.diagonal())

    def _vector(self, x, fits, n, what):
        """x as a whole float64 vector of the matrix's rows (fits_rows) or columns: itself, or a
        copy moved there. Collective."""
        if isinstance(x, ndarray) and fits(x._h):
            return x._h
        out = zeros(n, comm=self._comm, label=f"spmdarray.sparse.{what}")
        out[...] = x
        if not fits(out._h):
            raise Error(f"spmdarray.sparse: the {what} vector is on another communicator than the matrix")
        return out._h

    def _on_columns(self, x):
        return self._vector(x, self._m.fits_columns, self.shape[1], "columns")

    def _on_rows(self, x):
        return self._vector(x, self._m.fits_rows, self.shape[0], "rows")

    # -- what SciPy has and spmdarray does not (no silent gather) --
    def toarray(self):
        raise NotImplementedError("spmdarray.sparse.csr_matrix.toarray (a dense gather of the matrix is not bound)")

    todense = toarray

    def __getitem__(self, key):
        raise NotImplementedError("spmdarray.sparse.csr_matrix indexing")

    def __array__(self, *args, **kw):
        raise NotImplementedError("spmdarray.sparse.csr_matrix as a NumPy array (a dense gather is not bound)")


csr_array = csr_matrix  # SciPy's newer name: the same type here (A @ x, A.dot(x) are products in both)


def _shape2(shape):
    if len(shape) != 2:
        raise ValueError(f"spmdarray.sparse: a matrix shape has 2 extents ({shape!r} given)")
    n, m = (int(v) for v in shape)
    if n < 0 or m < 0:
        raise ValueError(f"spmdarray.sparse: negative extents {shape!r}")
    return n, m


def _grid(fn, *ext):
    for e in ext:
        if not isinstance(e, (numbers.Integral, np.integer)) or isinstance(e, (bool, np.bool_)):
            raise TypeError(f"spmdarray.sparse.{fn}: grid extents are integers ({e!r} given)")
    return [int(e) for e in ext]


def poisson2d(nx, ny=None, *, comm=None):
    """The 5-point Laplacian with homogeneous Dirichlet boundaries on an nx x ny grid of unknowns
    (spmd::sparse::poisson2d): N = nx * ny rows, unknown k = i * ny + j, A(k, k) = 4, -1 for each
    grid neighbour; unscaled (no 1/h^2); symmetric positive definite. Each rank generates only
    its own rows. Collective."""
    ny = nx if ny is None else ny
    comm = comm or Comm()
    return csr_matrix(_core.csr_poisson(comm._c, _grid("poisson2d", nx, ny)), comm=comm)


def poisson3d(nx, ny=None, nz=None, *, comm=None):
    """The 7-point Laplacian on an nx x ny x nz grid (A(k, k) = 6), k = (i * ny + j) * nz + l.
    Collective."""
    ny = nx if ny is None else ny
    nz = nx if nz is None else nz
    comm = comm or Comm()
    return csr_matrix(_core.csr_poisson(comm._c, _grid("poisson3d", nx, ny, nz)), comm=comm)


def convection_diffusion2d(nx, ny=None, peclet=1.0, *, comm=None):
    """The nonsymmetric upwind convection-diffusion operator of spmd::sparse::convection_diffusion2d
    on an nx x ny grid (poisson2d at peclet = 0). Collective."""
    ny = nx if ny is None else ny
    comm = comm or Comm()
    return csr_matrix(_core.csr_convection_diffusion2d(comm._c, *_grid("convection_diffusion2d", nx, ny),
                                                       float(peclet)), comm=comm)


def issparse(x):
    """True for an spmdarray.sparse matrix. Local."""
    return isinstance(x, csr_matrix)


isspmatrix_csr = issparse

from . import linalg  # noqa: E402  (spmdarray.sparse.linalg is spmdarray.linalg, as scipy.sparse.linalg)
