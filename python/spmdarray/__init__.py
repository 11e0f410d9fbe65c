"""spmdarray: MPI-distributed N-d arrays with NumPy's names, fused expressions, on Kokkos.

Run every rank the same program (``mpiexec -n 4 python app.py``). An ``ndarray`` is distributed
over a communicator; arithmetic builds a lazy expression that one kernel evaluates when it is
assigned (``a[1:-1] = 0.5 * (b[2:] + b[:-2])``) or reduced (``spmdarray.sum(a * b)``).

Collectiveness (every rank must make the call, with the same arguments): creating an array,
assignment, reductions, ``gather()`` / ``np.asarray(a)``, ``astype``, ``copy``, element reads and
writes by integer index, ``exchange_halo``. Making a view (slicing) and building an expression
are local and move nothing. See docs/python.md.
"""

import atexit
import math as _math
import builtins as _builtins  # sum, min, max, any, all are NumPy's names here
import numbers
import operator
import sys as _sys

import numpy as np

try:  # mpi4py first when present: it initialises MPI, and spmdarray must use that same MPI
    from mpi4py import MPI as _MPI
except ImportError:  # pragma: no cover - mpi4py is optional
    _MPI = None

from . import _core
from ._core import Error
from . import _expr
from ._expr import Expr, np_dtype, is_scalar

__all__ = ["Error", "Comm", "ndarray", "Expr", "zeros", "ones", "full", "empty", "arange", "array", "asarray",
           "zeros_like", "ones_like", "empty_like", "full_like",
           "sqrt", "exp", "log", "sin", "cos", "abs", "absolute", "negative", "minimum", "maximum", "where",
           "logical_and", "logical_or", "logical_not", "power", "sum", "prod", "min", "max", "amin", "amax", "mean",
           "dot", "vdot", "count_nonzero", "any", "all", "copy", "float64", "float32", "int64", "int32", "bool_"]

float64, float32, int64, int32, bool_ = np.float64, np.float32, np.int64, np.int32, np.bool_

_core.init()
if _MPI is not None:
    _theirs, _ours = _MPI.Get_library_version(), _core.mpi_library_version()
    if _theirs.split("\n")[0].strip() != _ours.split("\n")[0].strip():
        raise ImportError("spmdarray: mpi4py uses another MPI than spmdarray (mpi4py: "
                          f"{_theirs.splitlines()[0]!r}; spmdarray: {_ours.splitlines()[0]!r}); build mpi4py "
                          "against the same MPI (MPICC=mpicc.mpich pip install --no-binary mpi4py mpi4py)")
atexit.register(_core.finalize)  # after mpi4py's import: runs before MPI is finalized


class Comm:
    """A communicator: the library's own duplicate of an MPI communicator.

    ``Comm()`` is MPI_COMM_WORLD's duplicate (every array's default); ``Comm.from_mpi4py(c)``
    duplicates an mpi4py communicator (Collective over c); ``to_mpi4py()`` gives an mpi4py view
    of this duplicate (do not free it)."""

    __slots__ = ("_c",)
    _world = None

    def __init__(self, _c=None):
        if _c is None:
            if Comm._world is None:
                Comm._world = _core.world()
            _c = Comm._world
        self._c = _c

    @property
    def rank(self):
        return self._c.rank

    @property
    def size(self):
        return self._c.size

    def barrier(self):
        """Collective."""
        self._c.barrier()

    @staticmethod
    def from_mpi4py(comm):
        """Duplicate an mpi4py communicator. Collective over comm."""
        if _MPI is None:
            raise NotImplementedError("spmdarray.Comm.from_mpi4py: mpi4py is not installed")
        return Comm(_core.comm_from_fortran(comm.py2f()))

    def to_mpi4py(self):
        """An mpi4py Comm naming this duplicate (spmdarray frees it: do not call Free). Local."""
        if _MPI is None:
            raise NotImplementedError("spmdarray.Comm.to_mpi4py: mpi4py is not installed")
        return _MPI.Comm.f2py(self._c.fortran_handle())

    def __eq__(self, other):
        return isinstance(other, Comm) and self._c.same(other._c)

    def __hash__(self):
        return id(self._c)

    def __repr__(self):
        return f"spmdarray.Comm(rank={self.rank}, size={self.size})"


def _world():
    return Comm()


def _opts(halo, periodic, grid):
    def ints(x):
        return [] if x is None else ([int(x)] if isinstance(x, numbers.Integral) else [int(v) for v in x])
    p = [] if periodic is None else ([bool(periodic)] if isinstance(periodic, (bool, np.bool_)) else
                                     [bool(v) for v in periodic])
    return ints(halo), p, ints(grid)


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if not 1 <= len(shape) <= 3:
        raise NotImplementedError(f"spmdarray: arrays of {len(shape)} axes (spmdarray has 1 to 3)")
    return shape


def _create(shape, dtype, fill, value, comm, halo, periodic, grid, label):
    d = np_dtype(dtype)
    h, p, g = _opts(halo, periodic, grid)
    comm = comm or _world()
    return ndarray(_core.create(_expr.DTYPES[d], comm._c, list(_shape(shape)), h, p, g, label or "", fill, value))


def zeros(shape, dtype=np.float64, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's zeros, distributed over comm (default: world); halo, periodic, grid as the C++
    distribution options (default: no halo, no periodic axis, an automatic grid). Collective."""
    return _create(shape, dtype, 1, 0.0, comm, halo, periodic, grid, label)


def ones(shape, dtype=np.float64, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's ones (see zeros). Collective."""
    return _create(shape, dtype, 2, 1.0, comm, halo, periodic, grid, label)


def empty(shape, dtype=np.float64, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's empty: uninitialised (see zeros). Collective."""
    return _create(shape, dtype, 0, 0.0, comm, halo, periodic, grid, label)


def full(shape, fill_value, dtype=None, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's full (dtype from fill_value as NumPy does when not given). Collective."""
    d = np_dtype(dtype if dtype is not None else np.array(fill_value).dtype)
    if d.kind in "iub":
        a = _create(shape, d, 0, 0.0, comm, halo, periodic, grid, label)
        a[...] = fill_value  # integers beyond 2^53 stay exact
        return a
    return _create(shape, d, 2, float(fill_value), comm, halo, periodic, grid, label)


def arange(start, stop=None, step=1, dtype=None, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's arange (1-D). Collective."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("spmdarray.arange: step must not be zero")
    d = np_dtype(dtype if dtype is not None else np.result_type(start, stop, step))
    n = _builtins.max(0, int(np.ceil((stop - start) / step)))
    h, p, g = _opts(halo, periodic, grid)
    comm = comm or _world()
    return ndarray(_core.arange(_expr.DTYPES[d], comm._c, n, float(start), float(step), h, p, g, label or ""))


def array(obj, dtype=None, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """A distributed copy of obj (array-like); every rank passes the same data and keeps its own
    block. Collective."""
    x = np.asarray(obj, dtype=dtype)
    d = np_dtype(x.dtype)
    a = empty(x.shape, d, comm=comm, halo=halo, periodic=periodic, grid=grid, label=label)
    _core.set_owned_from(a._h, np.ascontiguousarray(x))
    return a


def asarray(obj, dtype=None, **kw):
    """obj itself when it is an spmdarray array (of dtype), else array(obj, ...). Collective."""
    if isinstance(obj, ndarray) and (dtype is None or np.dtype(dtype) == obj.dtype):
        return obj
    if isinstance(obj, ndarray):
        return obj.astype(dtype)
    return array(obj, dtype=dtype, **kw)


def zeros_like(a, dtype=None):
    return zeros(a.shape, dtype or a.dtype, comm=a.comm)


def ones_like(a, dtype=None):
    return ones(a.shape, dtype or a.dtype, comm=a.comm)


def empty_like(a, dtype=None):
    return empty(a.shape, dtype or a.dtype, comm=a.comm)


def full_like(a, fill_value, dtype=None):
    return full(a.shape, fill_value, dtype or a.dtype, comm=a.comm)


# ---- operators, shared by arrays and expressions ------------------------------------------------

def _binary(op, swap=False):
    make = _expr.make
    if op in _expr._FAST:  # _expr._fast's common cases without make's frame
        fast = _expr._fast

        def f(self, other):
            e = fast(op, self, other)
            return make(op, self, other) if e is None else e

        def r(self, other):
            e = fast(op, other, self)
            return make(op, other, self) if e is None else e
        return r if swap else f
    if swap:
        return lambda self, other: make(op, other, self)
    return lambda self, other: make(op, self, other)


def _power(self, other):
    """x ** y. NumPy takes a fast path for a scalar exponent of an array: x ** 2 is x * x (also of
    integers), and for floating x, x ** 0.5 is sqrt(x) and x ** -1 is 1 / x; so do these (the
    same bits: std::pow may round a square differently)."""
    if type(other) is int or type(other) is float:
        dt = _expr.dtype_of(self)
        # an integer array ** 2.0 is NumPy's float64 power, not a square
        if dt is not None and other == 2 and (dt.kind == "f" or (dt.kind == "i" and type(other) is int)):
            return _expr.make("square", self)
        if dt is not None and dt.kind == "f":
            if other == 0.5:
                return _expr.make("sqrt", self)
            if other == -1:
                return _expr.make("div", 1.0, self)
    return _expr.make("pow", self, other)


def _logic(op, swap=False):
    def f(self, other):
        for x in (self, other):
            if _expr.dtype_of(x) is not None and _expr.dtype_of(x).kind != "b":
                raise NotImplementedError(f"spmdarray: bitwise operators on {_expr.dtype_of(x)} arrays (& | ~ are "
                                          "bound for bool arrays: logical and, or, not)")
            if is_scalar(x) and not isinstance(x, (bool, np.bool_)):
                raise NotImplementedError("spmdarray: bitwise operators with an integer scalar")
        return _expr.make(op, other, self) if swap else _expr.make(op, self, other)
    return f


def _invert(self):
    if self.dtype.kind != "b":
        raise NotImplementedError(f"spmdarray: ~ on {self.dtype} arrays (bound for bool arrays: logical not)")
    return _expr.make("lnot", self)


_OPERATORS = {
    "__add__": _binary("add"), "__radd__": _binary("add", True), "__sub__": _binary("sub"),
    "__rsub__": _binary("sub", True), "__mul__": _binary("mul"), "__rmul__": _binary("mul", True),
    "__truediv__": _binary("div"), "__rtruediv__": _binary("div", True), "__pow__": _power,
    "__rpow__": _binary("pow", True), "__lt__": _binary("lt"), "__le__": _binary("le"), "__gt__": _binary("gt"),
    "__ge__": _binary("ge"), "__eq__": _binary("eq"), "__ne__": _binary("ne"), "__and__": _logic("land"),
    "__rand__": _logic("land", True), "__or__": _logic("lor"), "__ror__": _logic("lor", True),
    "__invert__": _invert, "__neg__": lambda self: _expr.make("neg", self), "__pos__": lambda self: self,
    "__abs__": lambda self: _expr.make("abs", self),
}


def _not_bound(name):
    def f(self, *args, **kw):
        raise NotImplementedError(f"spmdarray: the operator {name} is not bound (no silent NumPy fallback)")
    return f


for _name in ("__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__matmul__", "__rmatmul__", "__xor__",
              "__rxor__", "__lshift__", "__rshift__", "__divmod__"):
    _OPERATORS[_name] = _not_bound(_name)

_UFUNCS = {}  # filled below: NumPy ufunc -> spmdarray function


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method != "__call__" or kwargs or ufunc not in _UFUNCS:
        raise NotImplementedError(f"spmdarray: numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}"
                                  f"{' with ' + ', '.join(kwargs) if kwargs else ''} on spmdarray arrays is not bound "
                                  "(no silent NumPy fallback; np.asarray(a), a collective, gives a NumPy array)")
    return _UFUNCS[ufunc](*inputs)


def _array_function(self, func, types, args, kwargs):
    f = _FUNCTIONS.get(func)
    if f is None:
        raise NotImplementedError(f"spmdarray: numpy.{func.__name__} on spmdarray arrays is not bound (no silent "
                                  "NumPy fallback; np.asarray(a), a collective, gives a NumPy array)")
    return f(*args, **kwargs)


for _name, _f in _OPERATORS.items():
    setattr(Expr, _name, _f)
Expr.__array_ufunc__ = _array_ufunc
Expr.__array_function__ = _array_function
Expr.__hash__ = None


# ---- the array -------------------------------------------------------------------------------

def _holder_key(h):
    return (tuple(h.start), tuple(h.step), tuple(h.map), tuple(h.shape))


class ndarray:
    """A distributed array (or a view of one): see the module comment. Not constructed directly:
    use zeros, ones, full, empty, arange, array."""

    __slots__ = ("_h", "_dt", "_sh", "_g", "_k", "__weakref__")
    __hash__ = None

    def __init__(self, h, geometry=None):
        self._h = h
        # Read from the holder once, when first asked for (each read is a call into the binding,
        # and a statement in a loop asks for them many times); a holder's selection never changes.
        self._dt = None  # the NumPy dtype (hashing the binding's enum is slow)
        self._g = geometry  # (start, step, map, shape, parent_ndim, parent_id): see _geometry
        self._sh = None if geometry is None else geometry[3]  # the shape, a tuple
        self._k = None  # the operand's part of a compiled program's key: see _expr.leaf_key

    def _geometry(self):
        """The holder's selection of its parent: (start, step, map, shape, parent_ndim, parent_id),
        the first four as tuples. Two arrays of one geometry are the same view of the same parent."""
        g = self._g
        if g is None:
            h = self._h
            g = self._g = (tuple(h.start), tuple(h.step), tuple(h.map), self.shape, h.parent_ndim, h.parent_id)
        return g

    # -- queries (Local) --
    @property
    def shape(self):
        s = self._sh
        if s is None:
            s = self._sh = tuple(self._h.shape)
        return s

    @property
    def dtype(self):
        d = self._dt
        if d is None:
            d = self._dt = _expr.NP_OF[self._h.dtype]
        return d

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return _math.prod(self.shape)

    def __len__(self):
        return self.shape[0]

    @property
    def comm(self):
        return Comm(self._h.info()["comm"])

    @property
    def distribution(self):
        """The parent array's distribution: shape, halo, periodic, grid, and this rank's owned box
        [owned_lo, owned_hi) of the parent. Local."""
        i = self._h.info()
        i.pop("comm")
        return i

    def __repr__(self):  # no data: printing values would be a collective hidden in print()
        return f"spmdarray.ndarray(shape={self.shape}, dtype={self.dtype})"

    def __bool__(self):
        raise ValueError("spmdarray: the truth value of an array is ambiguous (use any() or all(); both are "
                         "collective)")

    def __iter__(self):
        raise NotImplementedError("spmdarray: iterating over an array (one collective per element); use "
                                  "np.asarray(a) (a collective) for a NumPy copy")

    # -- indexing (views: Local; element access: Collective) --
    def __getitem__(self, key):
        v, scalar = self._select(key)
        if scalar:
            return _reduce("sum" if v.dtype.kind != "b" else "any", v, _element=True)
        return v

    def __setitem__(self, key, value):
        if key is Ellipsis:  # a[...] = value: the array itself (no view to make)
            _assign(self, value)
            return
        v, _ = self._select(key)
        _assign(v, value)

    def _select(self, key):
        if type(key) is not tuple:
            key = (key,)
        n_ell = 0
        for k in key:
            t = type(k)
            if t is slice or t is int:  # the common case first
                continue
            if k is Ellipsis:
                n_ell += 1
                continue
            if k is None:
                raise NotImplementedError("spmdarray: np.newaxis / None in an index")
            if not isinstance(k, (numbers.Integral, np.integer)) or isinstance(k, (bool, np.bool_)):
                raise NotImplementedError(f"spmdarray: indexing with {type(k).__name__} (basic indexing - integers, "
                                          "slices, ... - is bound; fancy and boolean indexing are not)")
        if n_ell > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        g = self._g or self._geometry()
        shape = g[3]
        ndim = len(shape)
        nreal = len(key) - n_ell
        if nreal > ndim:
            raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {nreal} were indexed")
        if n_ell:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (ndim - nreal) + key[i + 1:]
        if len(key) < ndim:
            key = key + (slice(None),) * (ndim - len(key))
        start, step, amap = list(g[0]), list(g[1]), list(g[2])
        new_shape = []
        dropped = []
        for a in range(g[4]):
            j = amap[a]
            if j < 0:
                continue
            k, n = key[j], shape[j]
            if isinstance(k, slice):
                s0, s1, st = k.indices(n)
                start[a] += step[a] * s0
                step[a] *= st
                amap[a] = len(new_shape)
                new_shape.append(len(range(s0, s1, st)))
            else:
                i = int(k)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {j} with size {n}")
                i += n if i < 0 else 0
                start[a] += step[a] * i
                amap[a] = -1
                dropped.append(a)
        h = self._h
        if not new_shape:  # every axis indexed: one element, as a one-element view of the last axis
            a = dropped[-1]
            amap[a] = 0
            return ndarray(h.select(start, step, amap, [1])), True
        new_shape = tuple(new_shape)
        v = ndarray(h.select(start, step, amap, new_shape), (tuple(start), tuple(step), tuple(amap), new_shape,
                                                             g[4], g[5]))
        k = self._k or _expr.leaf_key(self)
        v._dt = k[0]
        v._k = (k[0], k[1], new_shape, k[3])
        return v, False

    # -- data out (Collective) --
    def gather(self):
        """The whole array as a NumPy array, on every rank. Collective (one allgather through the
        library's engine; for tests and small outputs)."""
        h = self._h
        if not h.whole():
            return self.copy().gather()
        if self.dtype.kind == "b":
            return ndarray(_core.convert(h, _core.DType.int32)).gather().astype(np.bool_)
        out = np.empty(self.shape, dtype=self.dtype)
        _core.gather_whole(h, out)
        return out

    def __array__(self, dtype=None, copy=None):
        g = self.gather()
        return g if dtype is None else g.astype(dtype)

    def copy(self):
        """A new array with this one's values (a view's: compact, on an automatic
        distribution). Collective."""
        if self._h.whole():
            return ndarray(_core.convert(self._h, self._h.dtype))
        out = empty(self.shape, self.dtype, comm=self.comm)
        out[...] = self
        return out

    def astype(self, dtype):
        """A new array of dtype (NumPy's unsafe cast, as astype). Collective."""
        d = np_dtype(dtype)
        if self._h.whole():
            return ndarray(_core.convert(self._h, _expr.DTYPES[d]))
        return self.copy().astype(d)

    def exchange_halo(self):
        """Fill the parent array's halo from its neighbours. Neighbour-collective. (Expressions
        exchange a stale halo themselves before they read it: NumPy's results whatever the halo.)"""
        _core.exchange_halo(self._h)

    def fill(self, value):
        self[...] = value

    # -- reductions (Collective) --
    def sum(self, *args, **kw):
        return sum(self, *args, **kw)

    def prod(self, *args, **kw):
        return prod(self, *args, **kw)

    def min(self, *args, **kw):
        return min(self, *args, **kw)

    def max(self, *args, **kw):
        return max(self, *args, **kw)

    def mean(self, *args, **kw):
        return mean(self, *args, **kw)

    def any(self, *args, **kw):
        return any(self, *args, **kw)

    def all(self, *args, **kw):
        return all(self, *args, **kw)

    def dot(self, other):
        return dot(self, other)

    # -- in place (Collective) --
    def _inplace(self, op, other):
        # other is a temporary when only the statement holds it (a += b * c): not settled
        temp = other if type(other) is Expr and _IADD_TEMPS and _sys.getrefcount(other) <= _IADD_BASE else None
        e = _expr.make(op, self, other)
        if not np.can_cast(e.dtype, self.dtype, casting="same_kind"):
            raise TypeError(f"spmdarray: cannot cast the {op} result from {e.dtype} to {self.dtype} in place "
                            "(NumPy's same_kind rule)")
        _assign(self, e, temp)
        return self

    def __iadd__(self, o):
        return self._inplace("add", o)

    def __isub__(self, o):
        return self._inplace("sub", o)

    def __imul__(self, o):
        return self._inplace("mul", o)

    def __itruediv__(self, o):
        return self._inplace("div", o)


for _name, _f in _OPERATORS.items():
    setattr(ndarray, _name, _f)
_expr.ND = ndarray
ndarray.__array_ufunc__ = _array_ufunc
ndarray.__array_function__ = _array_function



# ---- evaluation ---------------------------------------------------------------------------------

def _leaves(n, out):
    if isinstance(n, Expr):
        for a in n.args:
            _leaves(a, out)
    elif not is_scalar(n):
        out.append(n)
    return out


def _comm_of(n):
    leaves = _leaves(n, [])
    return leaves[0].comm if leaves else _world()


def _materialize(n, dtype=None):
    """n evaluated into a new array (of dtype, default n's own). Collective."""
    d = dtype or n.dtype
    out = empty(n.shape, d, comm=_comm_of(n))
    _assign(out, n)
    return out


_expr.MATERIALIZE = _materialize

# Snapshots of written arrays (_before_write), by the written parent, kept for reuse: a fresh
# array's first touch costs a page fault a page (8 MB took 18 ms more than a reused array on
# these 2-core VMs; on a GPU each would be a cudaMalloc), and a statement in a loop that keeps a
# named sub-expression (cuNumeric's stencil: average = ...; center[:] = 0.2 * average) takes one
# every iteration. _core.copy_parent reuses one only when no view of it is left. At most
# _SNAPSHOTS_KEEP per parent, _SNAPSHOTS_KEYS parents (the most recently written).
_SNAPSHOTS = {}
_SNAPSHOTS_KEEP = 2
_SNAPSHOTS_KEYS = 8


def _snapshot(dst):
    """A copy of dst's parent (this rank's block and halo, its halo flag): a whole array laid out
    as the parent. Local (no communication; the copy is this rank's storage alone)."""
    pid = dst._h.parent_id
    kept = _SNAPSHOTS.pop(pid, [])
    _SNAPSHOTS[pid] = kept  # the most recently written last
    for t in kept:
        if _core.copy_parent(dst._h, t._h):
            return t
    t = ndarray(_core.convert(dst._h.parent(), dst._h.dtype))
    if len(kept) < _SNAPSHOTS_KEEP:
        kept.append(t)
    while len(_SNAPSHOTS) > _SNAPSHOTS_KEYS:
        del _SNAPSHOTS[next(iter(_SNAPSHOTS))]
    return t


def _repoint(nodes, dst):
    """The trees of `nodes` read, where they read dst's parent, a snapshot of it taken now (the
    same selections), so they keep the values they were built from. Returns the rewrite, to run
    after dst is written (a tree that the statement being assigned shares is then read as it
    is, the same on every rank, whatever this rank holds). Shared sub-trees change for every
    tree that holds them: all were built before the write. Local."""
    pid = dst._h.parent_id
    snap = _snapshot(dst)

    def rewrite():
        views = {}  # id(leaf) -> (leaf, its view of the snapshot)
        seen = set()
        stack = list(nodes)
        while stack:
            e = stack.pop()
            if id(e) in seen:
                continue
            seen.add(id(e))
            new = []
            changed = False
            for a in e.args:
                if type(a) is Expr:
                    stack.append(a)
                elif hasattr(a, "_h") and a._h.parent_id == pid:
                    got = views.get(id(a))
                    if got is None:
                        h = a._h
                        got = views[id(a)] = (a, ndarray(snap._h.select(list(h.start), list(h.step), list(h.map),
                                                                       list(h.shape))))
                    a = got[1]
                    changed = True
                new.append(a)
            if changed:
                e.args = tuple(new)
    return rewrite


def _reads(n, pid, memo):
    """Whether expression n reads an array of parent pid (through any sub-expression)."""
    r = memo.get(id(n))
    if r is None:
        r = False
        for a in n.args:
            t = type(a)
            if t is Expr:
                if _reads(a, pid, memo):
                    r = True
                    break
            elif hasattr(a, "_h") and a._h.parent_id == pid:
                r = True
                break
        memo[id(n)] = r
    return r


def _outside_refs(nodes, parents):
    """Each node's reference count less the times live trees' arguments name it (`parents`:
    id(node) -> that number). Compared with _HELD_BASE, that of a node only its parents hold
    (measured by _calibrate on this interpreter, through this same function), it says whether
    something else holds the node - a user's variable, a container - as NumPy's temporary
    elision decides on reference counts. Local."""
    out = []
    for e in nodes:
        out.append(_sys.getrefcount(e) - parents.get(id(e), 0))
    return out


# Python 3.14's borrowed stack references give a name's value the reference count of a
# temporary inside an in-place operator (CPython gh-133170): there every operand counts as held.
_IADD_TEMPS = _sys.version_info < (3, 14)


class _IaddProbe:
    """ndarray's in-place operator path, to measure a temporary operand's reference count."""

    def __iadd__(self, o):
        return self._inplace("add", o)

    def _inplace(self, op, other):
        global _IADD_BASE
        _IADD_BASE = _sys.getrefcount(other)
        return self


def _census(live, root, temp=None):
    """The live expressions (dropping dead references from `live`), the number of references
    they hold to expressions but root and temp, and the sum of their reference counts but root's
    and temp's (each counted with this function's own references, _CENSUS_BASE of them). Local."""
    alive = []
    refs = []
    links = 0
    extra = 0
    for r in live:
        e = r()
        if e is not None:
            alive.append(e)
            refs.append(r)
            if e.kids:
                for a in e.args:
                    if type(a) is Expr and a is not root and a is not temp:
                        links += 1
            if e is not root and e is not temp:
                extra += _sys.getrefcount(e)
    live[:] = refs
    return alive, links, extra


def _calibrate():
    """_HELD_BASE, _CENSUS_BASE and _IADD_BASE on this interpreter (its own references of lists, loop
    variables and call frames differ between Python versions)."""
    global _HELD_BASE
    f64 = np.dtype(np.float64)
    t = Expr("neg", (1.0,), f64, ())
    p = Expr("neg", (t,), f64, ())
    nodes = [t]
    del t
    _HELD_BASE = _outside_refs(nodes, {id(nodes[0]): 1})[0]
    global _CENSUS_BASE
    _, links, extra = _census([_expr._ref(nodes[0])], None)
    _CENSUS_BASE = extra - 2  # t: its parent's reference and the list `nodes`
    probe = _IaddProbe()
    probe += Expr("neg", (1.0,), f64, ())
    del p, nodes


def _before_write(dst, value=None, temp=None):
    """The write barrier, before dst (its parent array) is written with `value`: an expression
    keeps the values its operands had when it was built (NumPy's eager result). The live
    expressions that something holds besides their parents in live trees (a user's variable, a
    container: _outside_refs) and that read dst's parent are repointed to a snapshot of it
    (_repoint); what only trees hold goes with them (a statement's temporaries: the common case
    costs a reference count a node). Not `value`, the tree being assigned (NumPy's aliasing rule
    covers it; _assign makes it dst's value afterwards), nor `temp` (an operand of value's root
    known to be a statement's temporary, which the call frames of an in-place operator hold).
    Returns (`value` when it is an expression of dst's type and shape, else None; the rewrite to
    run after the write, or None), for _assign. Local: no communication; ranks whose garbage
    collectors differ (an expression in an uncollected reference cycle counts as held) or that
    hold other expressions at most copy differently, and the statement being assigned reads what
    it reads on every rank."""
    root = value if type(value) is Expr else None
    alive, links, extra = _census(_expr.LIVE, root, temp)
    if not alive:
        return root, None
    # Fast test: when the references of the nodes (but root and temp) beyond those of a node
    # nothing holds are exactly the nodes' references to one another, nothing else holds any.
    skipped = (root is not None) + (temp is not None)
    if extra - _CENSUS_BASE * (len(alive) - skipped) == links:
        return _root_for(root, dst), None
    parents = {}
    for e in alive:
        for a in e.args:
            if type(a) is Expr:
                i = id(a)
                parents[i] = parents.get(i, 0) + 1
    del e
    held = [x for x, n in zip(alive, _outside_refs(alive, parents))
            if n > _HELD_BASE and x is not root and x is not temp]
    del alive
    after = None
    if held:
        pid = dst._h.parent_id
        memo = {}
        readers = [e for e in held if _reads(e, pid, memo)]
        if readers:
            after = _repoint(readers, dst)
    return _root_for(root, dst), after


def _root_for(root, dst):
    """The tree being assigned, when after the write its value is dst's (same type and shape);
    else None, and a tree that reads dst reads a snapshot of it instead (dst's stale halo
    exchanged first: Neighbour-collective then, on every rank alike). Local otherwise."""
    if root is not None and (root.dtype != dst.dtype or tuple(root.shape) != dst.shape):
        if _reads(root, dst._h.parent_id, {}):
            # now: the statement itself reads the snapshot, so its halo must need no exchange
            # (which pooled snapshot a rank reuses may differ, and each has its own halo plan):
            # refresh dst's first (the condition is the same on every rank: a collective step)
            h = dst._h
            if h.has_halo and h.halo_stale:
                _core.exchange_halo(h)
            _repoint([root], dst)()
        return None
    return root


def _settle_big(value):
    """value's largest sub-trees of more than _expr.MAX_NODES nodes (the first such on each path
    from the root, not the root) are evaluated into arrays of their own (_expr.settle) before
    value is: a rebound name's chain (x = x + alpha * p) is then one array the next time.
    Collective, in a collective call; the choice is value's structure, the same on every rank."""
    _expr.DEPTH += 1
    try:
        stack = list(value.args)
        while stack:
            e = stack.pop()
            if type(e) is not Expr:
                continue
            if e.nodes > _expr.MAX_NODES:
                _expr.settle(e)
            else:
                stack.extend(e.args)
        value.nodes = 1 + _builtins.sum(a.nodes for a in value.args if type(a) is Expr)
    finally:
        _expr.DEPTH -= 1


def _prepare(n, c):
    """Tree n for a program of type c: sub-trees that compute in another type are evaluated first."""
    if type(n) is not Expr:
        return n
    if n.op in _expr.COMPARE:
        if not _expr.fits_compare(_expr.optype(n), c):
            return _materialize(n)
    elif n.op == "cast":
        x = n.args[0]
        if isinstance(x, Expr) and _expr.optype(x) is not None and _expr.optype(x) != c:
            x = _materialize(x)
        return _prepare(x, c) if isinstance(x, Expr) else x
    elif n.op not in _expr.LOGICAL and n.op != "where" and n.dtype != c:
        return _materialize(n)
    elif n.op == "where" and n.dtype != c:
        return _materialize(n)
    args = tuple(_prepare(a, c) for a in n.args)
    if _builtins.all(x is y for x, y in zip(args, n.args)):
        return n
    return Expr(n.op, args, n.dtype, n.shape)


def _compile(tree, c, ndim, anchor_first=False, shape=None, sources=None):
    """Program for tree in type c. Returns (program, tree) - tree with sub-trees materialised
    where one program could not hold it. anchor_first: the first operand must be of the
    expression's rank and shape (a reduction's layout); None when no operand can be.
    sources: compile for the cache (see _expr.Program); (None, tree) when the tree does not fit
    one program."""
    converted = {}

    def leaf(x):
        h = x._h
        if x.dtype != c:
            key = id(h)
            if key not in converted:
                converted[key] = (x, _core.convert(h, _expr.DTYPES[c]))
            return converted[key][1]
        return h

    while True:
        p = _expr.Program(c, sources)
        try:
            r = _expr.gen(p, tree, leaf)
            break
        except _expr.TooBig:
            if sources is not None:
                return None, tree
            kids = [i for i, a in enumerate(tree.args) if isinstance(a, Expr)] if isinstance(tree, Expr) else []
            if not kids:
                raise NotImplementedError("spmdarray: an expression too large for one program")
            i = _builtins.max(kids, key=lambda i: _expr.need(tree.args[i]))
            args = list(tree.args)
            args[i] = _materialize(args[i])
            tree = Expr(tree.op, tuple(args), tree.dtype, tree.shape)
    # operands grouped as the C++ node visits them: parents of the expression's rank first
    order = sorted(range(len(p.operands)),
                   key=lambda i: (0 if p.operands[i].parent_ndim == ndim else p.operands[i].parent_ndim, i))
    if anchor_first:
        full = [i for i in order if p.operands[i].parent_ndim == ndim and tuple(p.operands[i].shape) == shape]
        if not full:
            return None, tree
        order.remove(full[0])
        order.insert(0, full[0])
    new = {old: k for k, old in enumerate(order)}
    code = list(p.code)
    load, term = _expr.CODE["load"], _expr.CODE["term"]
    for i in range(0, len(code), 5):
        if code[i] == load or (code[i] == term and code[i + 1] == 0):
            code[i + 2] = new[code[i + 2]]
    p.code = code
    p.operands = [p.operands[i] for i in order]
    p.operand_src = [p.operand_src[i] for i in order]
    p.result = r
    return p, tree


def _exchange_stale(operands, anchor):
    """Fill the stale halos that the program may read (operands read at other positions than the
    anchor's): a halo read then sees what NumPy would. Neighbour-collective (replicated decision)."""
    key = None
    for h in operands:
        if h.has_halo and h.halo_stale:
            if key is None:
                key = _holder_key(anchor)
            if _holder_key(h) != key:
                _core.exchange_halo(h)


# Compiled assignments and reductions, by the tree's structure (_expr.signature; an array for a
# copy, its _expr.leaf_key) and the destination's leaf_key: a statement in a loop compiles once.
# An entry: (program type, code, result, operand sources (array classes), constant sources,
# whether an operand has a halo, the binding's program type, whether it computes in floating
# point). Bounded: cleared when full.
_PROGRAMS = {}
_PROGRAMS_MAX = 1024


def _bind_cached(ent, arrays, scalars):
    """A cached program's operands and constants for this tree: (ops, kf, ki)."""
    ops = [arrays[k]._h for k in ent[3]]
    ksrc = ent[4]
    if not ksrc:
        return ops, [], []
    kv = [lit if pos < 0 else (-scalars[pos] if neg else scalars[pos]) for pos, neg, lit in ksrc]
    if ent[7]:
        return ops, [float(v) for v in kv], []
    return ops, [], [int(v) for v in kv]


def _exchange_stale_cached(ent, arrays, anchor):
    """_exchange_stale for a cached program's operands (ent, arrays: see _bind_cached), by their
    kept geometry and leaf keys. Neighbour-collective (replicated decision)."""
    g = (anchor._g or anchor._geometry())[:4]
    for k in ent[3]:
        a = arrays[k]
        if a._k[3]:  # its parent has a halo (leaf_key: signature made it)
            h = a._h
            if h.halo_stale and (a._g or a._geometry())[:4] != g:
                _core.exchange_halo(h)


def _run_cached(dst, ent, arrays, scalars):
    ops, kf, ki = _bind_cached(ent, arrays, scalars)
    if ent[5]:
        _exchange_stale_cached(ent, arrays, dst)
    _core.assign(dst._h, ent[6], ent[1], kf, ki, ent[2], ops)


def _cache(key, p):
    if len(_PROGRAMS) >= _PROGRAMS_MAX:
        _PROGRAMS.clear()
    halo = _builtins.any(h.has_halo for h in p.operands)
    ent = _PROGRAMS[key] = (p.c, p.code, p.result, p.operand_src, p.const_src, halo, _expr.DTYPES[p.c],
                            p.c.kind == "f")
    return ent


def _same_view(a, b):
    return (a._g or a._geometry()) == (b._g or b._geometry())


_calibrate()


def _assign(dst, value, temp=None):
    """dst[...] = value: one fused pass (plus the passes type changes need), after the write
    barrier (_before_write). Collective."""
    if type(value) is Expr and value.nodes > _expr.MAX_NODES and not _expr.DEPTH:
        _settle_big(value)
    root, after = _before_write(dst, value, temp) if _expr.LIVE else (None, None)
    _expr.DEPTH += 1
    try:
        _store(dst, value)
    finally:
        _expr.DEPTH -= 1
        if after is not None:  # held trees that read dst: the snapshot taken before the write
            after()
    if root is not None:  # the tree's value is now what dst holds (it may have read dst)
        _expr.become(root, dst)


def _lookup(dst, value):
    """dst[...] = value's cache key, cached program (None if none), array operands and scalars,
    for an expression or an array value (not the same view as dst). Local."""
    if type(value) is Expr:
        key, arrays, scalars = _expr.signature(value)
    else:
        key, arrays, scalars = value._k or _expr.leaf_key(value), [value], []
    ckey = (key, dst._k or _expr.leaf_key(dst))
    return ckey, _PROGRAMS.get(ckey), arrays, scalars


def _store(dst, value):
    """_assign without the barrier. Collective."""
    ckey = None
    tv = type(value)
    if tv is Expr or tv is ndarray:
        if tv is ndarray:
            if _same_view(dst, value):
                return
            # q[...] = p, whole arrays of one type and distribution: the rank's storage copied
            # (the interpreter's program loads and stores point by point: ~3x slower on a CPU)
            if _core.copy_whole(value._h, dst._h):
                return
        ckey, ent, arrays, scalars = _lookup(dst, value)
        if ent is not None:
            _run_cached(dst, ent, arrays, scalars)
            return
    if not (is_scalar(value) or isinstance(value, (Expr, ndarray))):
        value = array(value, comm=dst.comm) if np.ndim(value) > 0 else np.asarray(value).item()
    d = dst.dtype
    if not is_scalar(value):
        if value.ndim != dst.ndim:
            if value.ndim > dst.ndim:
                raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {dst.shape}")
            raise NotImplementedError(f"spmdarray: assigning an operand of {value.ndim} axes into {dst.ndim} "
                                      "(broadcasting across ranks of arrays)")
        try:
            if np.broadcast_shapes(value.shape, dst.shape) != dst.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"could not broadcast input array from shape {value.shape} into shape "
                             f"{dst.shape}") from None
    if is_scalar(value):
        c = d if d.kind != "b" else np.dtype(np.int32)
        value = bool(value) if d.kind == "b" else (float(value) if c.kind == "f" else int(value))
        tree = value
    else:
        c = _expr.program_type(value, d)
        if d != c and d.kind != "b":  # a third type: evaluate, convert, copy
            _assign(dst, _materialize(value, c).astype(d))
            return
        tree = _prepare(value, c)
        if tree is value and ckey is not None and _builtins.all(a.dtype == c for a in arrays):
            # one program of the tree's own types: compile for the cache, keep, run
            if tv is Expr:
                _, _, _, sources = _expr.signature(value, with_sources=True)
            else:  # a copy: one operand
                sources = ({id(value): 0}, {})
            p, _ = _compile(value, c, dst.ndim, sources=sources)
            if p is not None:
                _run_cached(dst, _cache(ckey, p), arrays, scalars)
                return
    p, tree = _compile(tree, c, dst.ndim)
    _exchange_stale(p.operands, dst._h)
    _core.assign(dst._h, _expr.DTYPES[c], p.code, p.kf, p.ki, p.result, p.operands)


def _reduce(kind, x, _element=False):
    """A whole-array reduction of an array or expression. Collective."""
    if type(x) is Expr and x.nodes > _expr.MAX_NODES and not _expr.DEPTH:
        _settle_big(x)
    _expr.DEPTH += 1
    try:
        return _reduce_now(kind, x, _element)
    finally:
        _expr.DEPTH -= 1


_INT32 = np.dtype(np.int32)


def _reduce_now(kind, x, _element):
    if is_scalar(x):
        return getattr(np, kind)(x)
    if not isinstance(x, (Expr, ndarray)):
        raise NotImplementedError(f"spmdarray.{kind} of a {type(x).__name__} (pass an spmdarray array or "
                                  "expression; NumPy arrays are NumPy's)")
    vt = x.dtype
    if kind in ("any", "all", "count_nonzero"):
        red = "count_nonzero"
    elif kind == "sum" and vt.kind == "b":
        red = "count_nonzero"
    else:
        red = kind
    if red in ("min", "max") and vt.kind == "b":
        raise NotImplementedError(f"spmdarray.{kind} of a bool array (use any / all)")
    if red in ("min", "max") and x.size == 0:
        raise ValueError(f"zero-size array to reduction operation {'minimum' if red == 'min' else 'maximum'} which "
                         "has no identity")
    if red in ("sum", "prod") and vt == _INT32 and not _element:
        x = Expr("cast", (x,), np.dtype(np.int64), x.shape)  # NumPy sums int32 in int64
    rk = getattr(_core.Reduction, red)
    tree = None
    if type(x) is Expr:
        # cached as assignments are (by the tree's structure; the key's shape includes the
        # layout-lending operand's): a reduction in a loop (CG's dot products) compiles once
        key, arrays, scalars = _expr.signature(x)
        rkey = ("reduce", key, tuple(x.shape))
        ent = _PROGRAMS.get(rkey)
        if ent is None:
            c = _expr.program_type(x)
            tree = _prepare(x, c)  # (collective when it evaluates sub-trees: once, kept below)
            if tree is x and _builtins.all(a.dtype == c for a in arrays):
                _, _, _, sources = _expr.signature(x, with_sources=True)
                p, _ = _compile(x, c, x.ndim, anchor_first=True, shape=tuple(x.shape), sources=sources)
                if p is not None:
                    ent = _cache(rkey, p)
        if ent is not None:
            ops, kf, ki = _bind_cached(ent, arrays, scalars)
            if ent[5]:
                _exchange_stale_cached(ent, arrays, arrays[ent[3][0]])
            r = _core.reduce(rk, ent[6], ent[1], kf, ki, ent[2], ops, list(x.shape))
            return _reduced(kind, red, vt, x, r, _element)
    if tree is None:
        c = _expr.program_type(x)
        tree = _prepare(x, c)
    p, tree = _compile(tree, c, x.ndim, anchor_first=True, shape=tuple(x.shape))
    if p is None:  # no operand lends its layout: evaluate first
        return _reduce(kind, _materialize(tree), _element=_element)
    _exchange_stale(p.operands, p.operands[0])
    r = _core.reduce(rk, _expr.DTYPES[c], p.code, p.kf, p.ki, p.result, p.operands, list(x.shape))
    return _reduced(kind, red, vt, x, r, _element)


def _reduced(kind, red, vt, x, r, _element):
    """The reduction's value r as NumPy gives it."""
    if kind == "any":
        return np.bool_(r > 0)
    if kind == "all":
        return np.bool_(r == x.size)
    if _element:
        return np.bool_(r > 0) if vt.kind == "b" else vt.type(r)
    if red == "count_nonzero":
        return np.int64(r)
    return (vt if not (red in ("sum", "prod") and vt.kind in "bi") else np.dtype(np.int64)).type(r)


def sum(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    """NumPy's sum (int64 for integers and bools): over every element, one fused pass; with axis
    (an int, a tuple) or keepdims, the library's per-axis sum. Collective."""
    _no_kw("sum", dtype, out, **kw)
    return _reduce("sum", x) if axis is None and not keepdims else _axis_reduce("sum", x, axis, keepdims)


def prod(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _no_kw("prod", dtype, out, **kw)
    return _reduce("prod", x) if axis is None and not keepdims else _axis_reduce("prod", x, axis, keepdims)


def min(x, axis=None, out=None, keepdims=False, **kw):
    _no_kw("min", out=out, **kw)
    if axis is None and not keepdims and not _is_bool(x):
        return _reduce("min", x)
    return _axis_reduce("min", x, axis, keepdims)


def max(x, axis=None, out=None, keepdims=False, **kw):
    _no_kw("max", out=out, **kw)
    if axis is None and not keepdims and not _is_bool(x):
        return _reduce("max", x)
    return _axis_reduce("max", x, axis, keepdims)


amin, amax = min, max


def _is_bool(x):
    return isinstance(x, (Expr, ndarray)) and x.dtype.kind == "b"


def mean(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
    """NumPy's mean (float64 for integers). Collective."""
    _no_kw("mean", dtype, out, **kw)
    if axis is not None or keepdims:
        return _axis_reduce("mean", x, axis, keepdims)
    if x.size == 0:
        return np.float64(np.nan)
    if x.dtype.kind == "f":
        s = _reduce("sum", x)
        return x.dtype.type(s / x.dtype.type(x.size))
    return np.float64(float(_reduce("sum", x)) / x.size)


def any(x, axis=None, out=None, keepdims=False, **kw):
    _no_kw("any", out=out, **kw)
    return _reduce("any", x) if axis is None and not keepdims else _axis_reduce("any", x, axis, keepdims)


def all(x, axis=None, out=None, keepdims=False, **kw):
    _no_kw("all", out=out, **kw)
    return _reduce("all", x) if axis is None and not keepdims else _axis_reduce("all", x, axis, keepdims)


def count_nonzero(x, axis=None, *, keepdims=False):
    """NumPy's count_nonzero (int64); with axis, a per-axis sum of x != 0. Collective."""
    if axis is None and not keepdims:
        return _reduce("count_nonzero", x)
    return _axis_reduce("sum", x if x.dtype.kind == "b" else _expr.make("ne", x, 0), axis, keepdims)


def vdot(a, b):
    """sum(a * b) in one pass (NumPy's vdot for real arrays of one shape). Collective."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"spmdarray.vdot: shapes {a.shape} and {b.shape} differ")
    return sum(_expr.make("mul", a, b))


def dot(a, b):
    """NumPy's dot of two 1-D arrays (their inner product, one pass). Collective."""
    if a.ndim != 1 or b.ndim != 1:
        raise NotImplementedError(f"spmdarray.dot of {a.ndim}-D and {b.ndim}-D arrays (a matrix product); "
                                  "bound for two 1-D arrays")
    if a.shape != b.shape:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned")
    return sum(_expr.make("mul", a, b))


def copy(a):
    return a.copy()


def _fn(op, numpy_name):
    ufunc = getattr(np, numpy_name)

    def f(x):
        if is_scalar(x):  # a scalar is the same on every rank: NumPy's value (np.sqrt(rr) in a solver loop)
            return ufunc(x)
        return _expr.make(op, x)
    f.__name__ = op
    return f


sqrt, exp, log = _fn("sqrt", "sqrt"), _fn("exp", "exp"), _fn("log", "log")
sin, cos = _fn("sin", "sin"), _fn("cos", "cos")
abs = absolute = _fn("abs", "absolute")
negative = _fn("neg", "negative")


def minimum(a, b):
    """NumPy's minimum (a NaN on either side gives NaN). Lazy."""
    return _expr.make("minimum", a, b)


def maximum(a, b):
    return _expr.make("maximum", a, b)


def power(a, b):
    return _expr.make("pow", a, b)


def where(cond, x, y):
    """NumPy's where(cond, x, y) (both sides evaluated). Lazy."""
    return _expr.make("where", cond, x, y)


def logical_and(a, b):
    return _expr.make("land", a, b)


def logical_or(a, b):
    return _expr.make("lor", a, b)


def logical_not(a):
    return _expr.make("lnot", a)


_UFUNCS.update({np.add: lambda a, b: _expr.make("add", a, b), np.subtract: lambda a, b: _expr.make("sub", a, b),
                np.multiply: lambda a, b: _expr.make("mul", a, b),
                np.true_divide: lambda a, b: _expr.make("div", a, b), np.negative: negative, np.sqrt: sqrt,
                np.exp: exp, np.log: log, np.sin: sin, np.cos: cos, np.absolute: abs, np.minimum: minimum,
                np.maximum: maximum, np.power: power, np.less: lambda a, b: _expr.make("lt", a, b),
                np.less_equal: lambda a, b: _expr.make("le", a, b), np.greater: lambda a, b: _expr.make("gt", a, b),
                np.greater_equal: lambda a, b: _expr.make("ge", a, b), np.equal: lambda a, b: _expr.make("eq", a, b),
                np.not_equal: lambda a, b: _expr.make("ne", a, b), np.logical_and: logical_and,
                np.logical_or: logical_or, np.logical_not: logical_not})
_FUNCTIONS = {np.sum: sum, np.prod: prod, np.min: min, np.max: max, np.amin: min, np.amax: max, np.mean: mean,
              np.any: any, np.all: all, np.count_nonzero: count_nonzero, np.dot: dot, np.vdot: vdot, np.where: where,
              np.copy: copy}


# ---- per-axis reductions (issue 28): the library's spmd::sum(a, axes, keepdims) ... argmax -----

try:
    _AxisError = np.exceptions.AxisError
except AttributeError:  # NumPy < 1.25
    _AxisError = np.AxisError

_AXIS_OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "mean": 4, "var": 5, "std": 6, "any": 7, "all": 8,
             "argmin": 9, "argmax": 10}
_F64, _I64, _I32, _BOOL = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.bool_)


def _norm_axis(a, ndim):
    a = operator.index(a)
    if not -ndim <= a < ndim:
        raise _AxisError(a, ndim)
    return a + ndim if a < 0 else a


def _norm_axes(axis, ndim):
    """NumPy's axis argument (None, an int, a tuple of ints) as sorted non-negative axes, with
    NumPy's errors (AxisError, a duplicate is a ValueError)."""
    if axis is None:
        return tuple(range(ndim))
    out = []
    for a in (axis if isinstance(axis, tuple) else (axis,)):
        a = _norm_axis(a, ndim)
        if a in out:
            raise ValueError("duplicate value in 'axis'")
        out.append(a)
    return tuple(sorted(out))


def _whole(x, dtype=None):
    """x (an array, a view or an expression) as a whole array of dtype (default its own): x itself
    when it already is one, else a new one. Collective when it copies."""
    d = np_dtype(dtype) if dtype is not None else x.dtype
    if isinstance(x, ndarray) and x._h.whole():
        return x if d == x.dtype else x.astype(d)
    return _materialize(x, d) if isinstance(x, Expr) else x.copy().astype(d) if d != x.dtype else x.copy()


def _result_dtype(kind, vt):
    if kind in ("sum", "prod"):
        return _I64 if vt.kind in "bi" else vt
    if kind in ("mean", "var", "std"):
        return vt if vt.kind == "f" else _F64
    if kind in ("any", "all"):
        return _BOOL
    if kind in ("argmin", "argmax"):
        return _I64
    return vt


def _operand_dtype(kind, vt):
    """The element type the library reduces: NumPy's accumulation type where it differs."""
    if kind in ("sum", "prod"):
        return _I64 if vt.kind in "bi" else vt
    if kind in ("mean", "var", "std"):
        return vt if vt.kind == "f" else _F64
    if kind in ("any", "all"):
        return _BOOL
    return _I32 if vt.kind == "b" else vt  # min, max, argmin, argmax


def _no_kw(fn, dtype=None, out=None, where=True, **kw):
    if dtype is not None or out is not None or where is not True or kw:
        names = [n for n, v in (("dtype", dtype), ("out", out)) if v is not None] + \
            (["where"] if where is not True else []) + list(kw)
        raise NotImplementedError(f"spmdarray.{fn}: the argument(s) {', '.join(names)} are not bound")


def _axis_reduce(kind, x, axis=None, keepdims=False, ddof=0):
    """NumPy's reduction `kind` over `axis` (None, an int, a tuple; argmin / argmax one int or
    None), keepdims, ddof (var, std). Collective: the library's per-axis reduction (each rank folds
    its block, the ranks along the reduced axes combine on a sub-communicator), then, without
    keepdims, one move of the result onto an automatic distribution of the smaller shape."""
    if is_scalar(x):
        return getattr(np, kind)(x, axis=axis, keepdims=keepdims)
    if not isinstance(x, (Expr, ndarray)):
        raise NotImplementedError(f"spmdarray.{kind} of a {type(x).__name__} (pass an spmdarray array or "
                                  "expression; NumPy arrays are NumPy's)")
    ndim, vt = x.ndim, x.dtype
    rt = _result_dtype(kind, vt)
    if kind in ("argmin", "argmax"):
        if axis is None:  # NumPy: the index into the flattened array
            r = _axis_reduce(kind, ravel(x) if ndim > 1 else x, 0)
            return full((1,) * ndim, r, _I64, comm=_comm_of(x)) if keepdims else r
        axes = (_norm_axis(axis, ndim),)
    else:
        axes = _norm_axes(axis, ndim)
    if not axes:  # axis=(): NumPy gives the elements themselves, in the result type
        if kind in ("var", "std"):
            return zeros(x.shape, rt, comm=_comm_of(x))
        return x.astype(rt) if isinstance(x, ndarray) else _materialize(x, rt)
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if count == 0 and kind in ("min", "max"):
        raise ValueError(f"zero-size array to reduction operation {'minimum' if kind == 'min' else 'maximum'} "
                         "which has no identity")
    if count == 0 and kind in ("argmin", "argmax"):
        raise ValueError(f"attempt to get {kind} of an empty sequence")
    a = _whole(x, _operand_dtype(kind, vt))
    r = ndarray(_core.axis_reduce(_AXIS_OPS[kind], a._h, list(axes), int(ddof)))
    if r.dtype != rt:  # min / max of bool (reduced as int32)
        r = r.astype(rt)
    if keepdims:
        return r
    if len(axes) == ndim:  # a scalar, as NumPy's
        return r[(0,) * ndim]
    return r[tuple(0 if d in axes else slice(None) for d in range(ndim))].copy()


def var(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """NumPy's var (float64 for integers; ddof). Collective: two passes (means shared within the
    groups of ranks along the reduced axes), then the squares folded."""
    _no_kw("var", dtype, out)
    return _axis_reduce("var", x, axis, keepdims, ddof)


def std(x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """NumPy's std: the square root of var. Collective."""
    _no_kw("std", dtype, out)
    return _axis_reduce("std", x, axis, keepdims, ddof)


def argmin(x, axis=None, out=None, keepdims=False):
    """NumPy's argmin: int64 global indices along one axis (first occurrence, first NaN); with
    axis=None the index into the flattened array (one ravel first). Collective."""
    _no_kw("argmin", out=out)
    return _axis_reduce("argmin", x, axis, keepdims)


def argmax(x, axis=None, out=None, keepdims=False):
    """NumPy's argmax (as argmin). Collective."""
    _no_kw("argmax", out=out)
    return _axis_reduce("argmax", x, axis, keepdims)


def _method(fn):
    def m(self, *args, **kw):
        return fn(self, *args, **kw)
    m.__name__ = fn.__name__
    m.__doc__ = fn.__doc__
    return m


for _name in ("var", "std", "argmin", "argmax"):
    setattr(ndarray, _name, _method(globals()[_name]))
_FUNCTIONS.update({np.var: var, np.std: std, np.argmin: argmin, np.argmax: argmax})
__all__ += ["var", "std", "argmin", "argmax"]


# ---- shape functions, scans, sorting (issue 28) -------------------------------------------------
# reshape, ravel, transpose, cumsum, cumprod, sort, argsort, unique call the library's functions
# (shape.hpp, scan.hpp, sort.hpp); flip and squeeze are views, and roll, concatenate, stack and
# expand_dims slice assignments into a new array, as the library's own are.

def _ndim_ok(fn, n):
    if not 1 <= n <= 3:
        raise NotImplementedError(f"spmdarray.{fn}: a result of {n} axes (spmdarray arrays have 1 to 3)")


def _as_array(fn, x):
    if isinstance(x, Expr):
        return _materialize(x)
    if not isinstance(x, ndarray):
        raise NotImplementedError(f"spmdarray.{fn} of a {type(x).__name__} (pass an spmdarray array or expression)")
    return x


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """NumPy's reshape, as a new array (never a view) on an automatic distribution; one entry may be
    -1. Collective (one exchange of C-order runs, nothing gathered)."""
    shape = newshape if shape is None else shape
    if order != "C":
        raise NotImplementedError("spmdarray.reshape: order='C' only")
    a = _as_array("reshape", a)
    shape = [operator.index(shape)] if not isinstance(shape, (tuple, list)) else [operator.index(s) for s in shape]
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if -1 in shape:
        if known == 0 or a.size % known:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = a.size // known
    if _builtins.any(s < 0 for s in shape) or int(np.prod(shape, dtype=np.int64)) != a.size:
        raise ValueError(f"cannot reshape array of size {a.size} into shape {tuple(shape)}")
    _ndim_ok("reshape", len(shape))
    return ndarray(_core.reshape(_whole(a)._h, shape))


def ravel(a, order="C"):
    """NumPy's ravel, as a new 1-D array (C order). Collective."""
    if order != "C":
        raise NotImplementedError("spmdarray.ravel: order='C' only")
    return reshape(a, (a.size,))


def transpose(a, axes=None):
    """NumPy's transpose (a.T: the axes reversed), as a new array on an automatic distribution.
    Collective (one redistribution)."""
    a = _as_array("transpose", a)
    n = a.ndim
    if axes is None:
        order = list(range(n))[::-1]
    else:
        order = [_norm_axis(x, n) for x in axes]
        if len(order) != n or sorted(order) != list(range(n)):
            raise ValueError("axes don't match array")
    return ndarray(_core.transpose(_whole(a)._h, order))


def flip(m, axis=None):
    """NumPy's flip: a view (reversed steps), no copy. Local."""
    m = _as_array("flip", m)
    axes = _norm_axes(axis, m.ndim)
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(m.ndim))]


def squeeze(a, axis=None):
    """NumPy's squeeze: a view without axes of extent 1. Local. (At least one axis must remain:
    spmdarray has no 0-d arrays.)"""
    a = _as_array("squeeze", a)
    if axis is None:
        axes = tuple(d for d in range(a.ndim) if a.shape[d] == 1)
    else:
        axes = _norm_axes(axis, a.ndim)
        if _builtins.any(a.shape[d] != 1 for d in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if len(axes) == a.ndim:
        raise NotImplementedError("spmdarray.squeeze: a 0-d result (spmdarray arrays have 1 to 3 axes)")
    return a[tuple(0 if d in axes else slice(None) for d in range(a.ndim))]


def _along(n, axis, sl):
    return tuple(sl if d == axis else slice(None) for d in range(n))


def roll(a, shift, axis=None):
    """NumPy's roll, as a new array: two slice assignments per axis. Collective."""
    a = _as_array("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape) if a.ndim > 1 else roll(a, shift, 0)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = [0] * a.ndim
    for s, ax in zip(shifts, axes):
        total[_norm_axis(ax, a.ndim)] += operator.index(s)
    src = a
    for ax, s in enumerate(total):
        n = a.shape[ax]
        s = s % n if n else 0
        if s == 0:
            continue
        out = empty(a.shape, a.dtype, comm=a.comm)
        out[_along(a.ndim, ax, slice(s, None))] = src[_along(a.ndim, ax, slice(0, n - s))]
        out[_along(a.ndim, ax, slice(0, s))] = src[_along(a.ndim, ax, slice(n - s, None))]
        src = out
    return src.copy() if src is a else src


def concatenate(arrays, axis=0, out=None, dtype=None):
    """NumPy's concatenate, as a new array on an automatic distribution over the first operand's
    communicator: one slice assignment per operand. Collective."""
    if out is not None:
        raise NotImplementedError("spmdarray.concatenate: out= is not bound")
    xs = [_as_array("concatenate", x) for x in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        xs, axis = [ravel(x) if x.ndim > 1 else x for x in xs], 0
    n = xs[0].ndim
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != n:
            raise ValueError("all the input arrays must have same number of dimensions, but the array at index 0 "
                             f"has {n} dimension(s) and the array at index {i} has {x.ndim} dimension(s)")
    ax = _norm_axis(axis, n)
    for i, x in enumerate(xs[1:], 1):
        for d in range(n):
            if d != ax and x.shape[d] != xs[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size {xs[0].shape[d]} "
                                 f"and the array at index {i} has size {x.shape[d]}")
    shape = list(xs[0].shape)
    shape[ax] = _builtins.sum(x.shape[ax] for x in xs)
    d = np_dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in xs])
    res = empty(tuple(shape), d, comm=xs[0].comm)
    at = 0
    for x in xs:
        k = x.shape[ax]
        if k:
            res[_along(n, ax, slice(at, at + k))] = x
        at += k
    return res


def stack(arrays, axis=0, out=None, dtype=None):
    """NumPy's stack, as a new array of one more axis: one slice assignment per operand.
    Collective."""
    if out is not None:
        raise NotImplementedError("spmdarray.stack: out= is not bound")
    xs = [_as_array("stack", x) for x in arrays]
    if not xs:
        raise ValueError("need at least one array to stack")
    if _builtins.any(x.shape != xs[0].shape for x in xs):
        raise ValueError("all input arrays must have the same shape")
    n = xs[0].ndim + 1
    ax = _norm_axis(axis, n)
    _ndim_ok("stack", n)
    shape = list(xs[0].shape)
    shape.insert(ax, len(xs))
    d = np_dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in xs])
    res = empty(tuple(shape), d, comm=xs[0].comm)
    for i, x in enumerate(xs):
        res[_along(n, ax, i)] = x
    return res


def expand_dims(a, axis):
    """NumPy's expand_dims, as a new array (a view cannot have more axes than its array): one slice
    assignment. Collective."""
    a = _as_array("expand_dims", a)
    naxes = len(axis) if isinstance(axis, tuple) else 1
    n = a.ndim + naxes
    axes = _norm_axes(axis, n)
    _ndim_ok("expand_dims", n)
    it = iter(a.shape)
    shape = tuple(1 if d in axes else next(it) for d in range(n))
    res = empty(shape, a.dtype, comm=a.comm)
    res[tuple(0 if d in axes else slice(None) for d in range(n))] = a
    return res


def _scan(op, fn, a, axis):
    a = _as_array(fn, a)
    if axis is None:
        a, axis = (ravel(a) if a.ndim > 1 else a), 0
    ax = _norm_axis(axis, a.ndim)
    d = a.dtype if a.dtype.kind == "f" else _I64  # NumPy accumulates bool and int32 in int64
    return ndarray(_core.scan(op, _whole(a, d)._h, ax))


def cumsum(a, axis=None, dtype=None, out=None):
    """NumPy's cumsum (without an axis: of the flattened array). Collective: a local scan, an
    exclusive scan of the totals along the axis, an offset added."""
    _no_kw("cumsum", dtype, out)
    return _scan(0, "cumsum", a, axis)


def cumprod(a, axis=None, dtype=None, out=None):
    """NumPy's cumprod (as cumsum). Collective."""
    _no_kw("cumprod", dtype, out)
    return _scan(1, "cumprod", a, axis)


def _sort_op(op, fn, a, axis):
    a = _as_array(fn, a)
    if axis is None:
        a = ravel(a) if a.ndim > 1 else a
    elif a.ndim > 1:
        raise NotImplementedError(f"spmdarray.{fn} of a {a.ndim}-D array along an axis (1-D arrays, or axis=None)")
    else:
        _norm_axis(axis, 1)
    if a.dtype.kind == "b":
        r = ndarray(_core.sort(op, _whole(a, _I32)._h))
        return r.astype(_BOOL) if op != 1 else r
    return ndarray(_core.sort(op, _whole(a)._h))


def sort(a, axis=-1, kind=None, order=None):
    """NumPy's sort of a 1-D array (or of the flattened array with axis=None), as a new array:
    a parallel sample sort (stable; NaNs last). Collective."""
    if order is not None:
        raise NotImplementedError("spmdarray.sort: order= is not bound")
    return _sort_op(0, "sort", a, axis)


def argsort(a, axis=-1, kind=None, order=None):
    """NumPy's argsort(a, kind='stable') of a 1-D array: int64 global indices, always stable
    (equal keys in index order, NaNs last). Collective."""
    if order is not None:
        raise NotImplementedError("spmdarray.argsort: order= is not bound")
    return _sort_op(1, "argsort", a, axis)


def unique(ar):
    """NumPy's unique (the sorted distinct values of the flattened array; one NaN), as a new 1-D
    array. Collective."""
    return _sort_op(2, "unique", ar, None)


def _ndarray_reshape(self, *shape, order="C"):
    return reshape(self, shape[0] if len(shape) == 1 else shape, order)


def _ndarray_transpose(self, *axes):
    return transpose(self, None if not axes else (axes[0] if len(axes) == 1 and isinstance(axes[0], tuple)
                                                   else axes))


def _ndarray_sort(self, axis=-1, kind=None, order=None):
    """In place, as NumPy's a.sort(). Collective."""
    self[...] = sort(self, axis, kind, order)


ndarray.reshape = _ndarray_reshape
ndarray.transpose = _ndarray_transpose
ndarray.T = property(lambda self: transpose(self), doc="transpose(a): a new array. Collective.")
ndarray.ravel = _method(ravel)
ndarray.flatten = _method(ravel)
ndarray.squeeze = _method(squeeze)
ndarray.cumsum = _method(cumsum)
ndarray.cumprod = _method(cumprod)
ndarray.argsort = _method(argsort)
ndarray.sort = _ndarray_sort
_FUNCTIONS.update({np.reshape: reshape, np.ravel: ravel, np.transpose: transpose, np.flip: flip, np.squeeze: squeeze,
                   np.roll: roll, np.concatenate: concatenate, np.stack: stack, np.expand_dims: expand_dims,
                   np.cumsum: cumsum, np.cumprod: cumprod, np.sort: sort, np.argsort: argsort, np.unique: unique})
__all__ += ["reshape", "ravel", "transpose", "flip", "squeeze", "roll", "concatenate", "stack", "expand_dims",
            "cumsum", "cumprod", "sort", "argsort", "unique"]


# ---- generated arrays (issue 28): linspace, eye, identity; spmdarray.random -------------------

def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, comm=None, halo=None,
             periodic=None, grid=None, label=None):
    """NumPy's linspace (scalar start and stop; float64 or float32), computed as NumPy computes it
    (start + i * step, the last one stop exactly). Collective."""
    if np.ndim(start) or np.ndim(stop) or axis != 0:
        raise NotImplementedError("spmdarray.linspace: array start / stop (and axis) are not bound")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    d = np_dtype(dtype) if dtype is not None else _F64
    if d.kind != "f":
        raise NotImplementedError(f"spmdarray.linspace: dtype {d} (float64 and float32 are bound)")
    h, p, g = _opts(halo, periodic, grid)
    comm = comm or _world()
    a = ndarray(_core.linspace(_expr.DTYPES[d], comm._c, float(start), float(stop), num, bool(endpoint), h, p, g,
                               label or ""))
    if retstep:
        div = (num - 1) if endpoint else num
        return a, ((float(stop) - float(start)) / div if div > 0 else np.nan)
    return a


def eye(N, M=None, k=0, dtype=np.float64, order="C", *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's eye: N x M, ones on diagonal k. Collective."""
    if order != "C":
        raise NotImplementedError("spmdarray.eye: order='C' only")
    M = N if M is None else M
    N, M, k = operator.index(N), operator.index(M), operator.index(k)
    if N < 0 or M < 0:
        raise ValueError("negative dimensions are not allowed")
    h, p, g = _opts(halo, periodic, grid)
    comm = comm or _world()
    return ndarray(_core.eye(_expr.DTYPES[np_dtype(dtype)], comm._c, N, M, k, h, p, g, label or ""))


def identity(n, dtype=np.float64, *, comm=None, halo=None, periodic=None, grid=None, label=None):
    """NumPy's identity. Collective."""
    return eye(n, dtype=dtype, comm=comm, halo=halo, periodic=periodic, grid=grid, label=label)


__all__ += ["linspace", "eye", "identity", "random"]

from . import random  # noqa: E402  (spmdarray.random needs the names above)


# ---- the rank's own block (issue 28): a.local, from_local ---------------------------------------

#: Whether the arrays live in GPU memory (a CUDA build): a.local is then a CuPy array (or a DLPack
#: object where CuPy is not installed), not a NumPy one.
device_memory = not _core.HOST_MEMORY


def synchronize():
    """Wait until this rank's kernels have finished. On a GPU, assignments return once their
    kernel is queued (as CuPy's do); whatever reads values on the host (a reduction to a Python
    number, gather, a.local) waits by itself, so only a timer around GPU statements needs this.
    Local."""
    _core.fence()


def _local(self):
    """This rank's owned block of the array (a whole array, not a view) as a NumPy array over the
    library's storage: no copy; writing into it writes the array (its halo is then marked stale,
    refilled before the next expression that reads it). Shape: the owned box's extents
    (``a.distribution['owned_lo']`` to ``owned_hi``). Local. On a device build
    (``spmdarray.device_memory``) it is a CuPy array over the GPU memory, no copy either (the
    library's kernels are finished first), or, without CuPy, an object with ``__dlpack__`` for
    ``torch.from_dlpack`` and the like (written through it on another stream: synchronize that
    stream before the next spmdarray statement reads the array). The block keeps the array's
    storage alive, until spmdarray is finalized at interpreter exit. A block kept and
    written after later expressions: call exchange_halo() before reading the halo. Taking the
    block points the expressions that read the array at a snapshot of it (they keep the values
    they were built from; local); an expression built while a block is kept, then the block
    written, sees the new values (as a NumPy view would): take a.local again, or copy(), to pin
    them."""
    if not self._h.whole():
        raise NotImplementedError("spmdarray: a.local of a view (a.local is the block of a whole array)")
    _, after = _before_write(self)  # the block may be written: expressions that read it keep a snapshot
    if after is not None:
        after()
    blk = _core.local_block(self._h)
    if not device_memory:
        return blk
    try:
        import cupy
    except ImportError:
        return blk
    return cupy.from_dlpack(blk)


ndarray.local = property(_local, doc=_local.__doc__)


def from_local(x, like, dtype=None):
    """A new array distributed as `like` (an spmdarray array: its shape, process grid, halo,
    periodic axes) whose owned block on each rank is this rank's `x` (a NumPy array of the shape of
    ``like.local``; on a device build also a CuPy or other CUDA array); dtype: x's (default) or the one given. Collective: a block of another shape on
    any rank is a ValueError on every rank. The halo is zero until exchanged."""
    if not isinstance(like, ndarray):
        raise NotImplementedError("spmdarray.from_local: like= must be an spmdarray array (its distribution is used)")
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):  # CuPy's, PyTorch's arrays: as they are
        x = np.asarray(x)
    d = np_dtype(dtype if dtype is not None else x.dtype)
    parent = ndarray(like._h.parent())
    out = zeros(parent.shape, d, comm=parent.comm, halo=parent.distribution["halo"],
                periodic=parent.distribution["periodic"], grid=parent.distribution["grid"])
    blk = out.local
    host = isinstance(blk, np.ndarray)
    cupy_blk = hasattr(blk, "__cuda_array_interface__")  # CuPy's: takes NumPy and device arrays
    # agreed before any rank raises: a rank without CuPy (device build) fails every rank alike
    if _core.any_rank(out._h, x.shape != blk.shape or not (host or cupy_blk)):
        # every rank is here: a second agreement picks the one error every rank raises
        if _core.any_rank(out._h, not (host or cupy_blk)):
            raise NotImplementedError("spmdarray.from_local on a device build needs CuPy on every rank ("
                                      + ("this rank has none)" if not (host or cupy_blk) else "another rank has none)"))
        raise ValueError(f"spmdarray.from_local: a rank's block has another shape than like's owned block (this "
                         f"rank: {x.shape} given, {blk.shape} owned)")
    if host:
        blk[...] = np.asarray(x)
    else:
        import cupy
        blk[...] = cupy.asarray(x)
        cupy.cuda.get_current_stream().synchronize()  # the library's kernels run on their own stream
    return out


__all__ += ["from_local", "device_memory", "synchronize"]


# ---- sparse matrices and CG (issue 28): spmdarray.sparse, spmdarray.linalg ----------------------

from . import linalg, sparse  # noqa: E402  (they need the names above)

__all__ += ["linalg", "sparse"]
