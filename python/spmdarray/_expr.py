"""Lazy expressions and their compilation into one program of the fused interpreter.

Operators on arrays build ``Expr`` trees; nothing runs until a tree is assigned
(``a[...] = e``) or reduced (``sum(e)``). Then ``compile_tree`` turns it into a short register
program (python/src/program.hpp runs it inside one kernel of the C++ expression engine, which
classifies the operands, reads halos, moves data between layouts and applies NumPy's aliasing
rule). One program computes in one type C (float64, float32, int64 or int32). What NumPy
computes in another type is evaluated first into a temporary array of that type (an extra pass,
never a different answer): a sub-expression of another type, an operand of another dtype (a
converted copy), a destination of a third type (evaluated, converted, then copied).
"""

import math
import numbers
import weakref

import numpy as np

from . import _core

OPS = ["load", "const", "neg", "abs", "sqrt", "exp", "log", "sin", "cos", "lnot", "add", "sub", "mul",
       "div", "pow", "minimum", "maximum", "lt", "le", "gt", "ge", "eq", "ne", "land", "lor", "where", "lin",
       "term"]
NONE = 255  # program.hpp's kNone: no constant
CODE = {name: i for i, name in enumerate(OPS)}
if list(_core.op_codes()) != list(range(len(OPS))):  # python/src/program.hpp's enum Op
    raise ImportError("spmdarray: _core's op codes differ from spmdarray/_expr.py's (a stale build)")

DTYPES = {np.dtype(np.float64): _core.DType.float64, np.dtype(np.float32): _core.DType.float32,
          np.dtype(np.int64): _core.DType.int64, np.dtype(np.int32): _core.DType.int32,
          np.dtype(np.bool_): _core.DType.bool}
NP_OF = {v: k for k, v in DTYPES.items()}

# square: x ** 2 (NumPy computes it as x * x; the program multiplies the register by itself)
UNARY = {"neg", "abs", "sqrt", "exp", "log", "sin", "cos", "lnot", "square"}
FLOAT_UNARY = {"sqrt", "exp", "log", "sin", "cos"}
ARITH = {"add", "sub", "mul", "div", "pow", "minimum", "maximum"}
COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
LOGICAL = {"land", "lor", "lnot"}


def np_dtype(dtype):
    """The NumPy dtype for a user's dtype argument; NotImplementedError outside the five."""
    d = np.dtype(dtype)
    if d not in DTYPES:
        raise NotImplementedError(f"spmdarray: dtype {d} (spmdarray has float64, float32, int64, int32 and bool)")
    return d


_SCALARS = (float, int, bool)


def is_scalar(x):
    t = type(x)
    if t in _SCALARS:
        return True
    if t is Expr or hasattr(x, "_h"):
        return False
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, complex)


# Every live expression, weakly (the write barrier: spmdarray/__init__.py's _before_write): an
# expression holds the values its operands had when it was built, as NumPy's eager result would.
# Before an array is written, the held live expressions that read it (other than the one being
# assigned) are pointed at a snapshot of it. Dead references are dropped there and when the list
# grows past LIVE_PRUNE.
LIVE = []
LIVE_PRUNE = 4096
_ref = weakref.ref
# A sub-tree of more nodes is evaluated into an array of its own when the tree that holds it is
# next assigned or reduced (spmdarray/__init__.py's _settle_big, a collective call anyway):
# x = x + a * p in a loop would otherwise grow a tree by three nodes an iteration and re-evaluate
# the chain at every use.
# A tree that would pass HARD_NODES (a loop that rebinds a name and calls nothing collective)
# has its largest sub-tree evaluated where it is built, a collective step then, so that no tree
# outgrows Python's recursion limit (the compiler walks trees recursively, two frames a level).
MAX_NODES = 64
HARD_NODES = 128
# > 0 while the package evaluates something (an assignment, a reduction, a settle): the trees it
# makes then are its own (compile splits, type changes), never settled on the way
DEPTH = 0
MATERIALIZE = None  # set by spmdarray/__init__.py: evaluate an expression into a new array


def _prune():
    LIVE[:] = [r for r in LIVE if r() is not None]


class Expr:
    """A lazy element-wise expression (see the module comment). Operators as on arrays."""

    __slots__ = ("op", "args", "dtype", "shape", "need", "nodes", "kids", "__weakref__")

    def __init__(self, op, args, dtype, shape):
        self.op, self.args, self.dtype, self.shape = op, args, dtype, shape
        # nodes and kids (references to expressions: the write barrier's); need: registers to
        # evaluate it (Sethi-Ullman: children in decreasing need)
        if len(args) == 2:
            x, y = args
            if type(x) is Expr:
                nx, nodes, kids = x.need, 1 + x.nodes, 1
            else:
                nx, nodes, kids = 1, 1, 0
            if type(y) is Expr:
                ny = y.need
                nodes += y.nodes
                kids += 1
            else:
                ny = 1
            need = nx + 1 if nx == ny else (nx if nx > ny else ny)
        else:
            nodes, kids = 1, 0
            for a in args:
                if type(a) is Expr:
                    nodes += a.nodes
                    kids += 1
            need = None
        if nodes > HARD_NODES and DEPTH == 0:
            big = max((a for a in args if type(a) is Expr), key=lambda a: a.nodes)
            settle(big)
            nodes = 1 + sum(a.nodes for a in args if type(a) is Expr)
            need = None
        if need is None:
            ns = sorted((a.need if type(a) is Expr else 1 for a in args), reverse=True)
            need = max(x + i for i, x in enumerate(ns))
        self.need, self.nodes, self.kids = need, nodes, kids
        if len(LIVE) >= LIVE_PRUNE:
            _prune()
        LIVE.append(_ref(self))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __bool__(self):
        raise ValueError("spmdarray: the truth value of an array expression is ambiguous (use any() or all(); "
                         "both are collective)")

    def __repr__(self):
        return f"spmdarray.Expr({self.op}, shape={self.shape}, dtype={self.dtype})"

    # copies are expressions of the same operands, registered like any other (the write barrier
    # must see them); the operands stay shared, as their values are (nothing is copied)
    def __copy__(self):
        return Expr(self.op, self.args, self.dtype, self.shape)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        raise TypeError("spmdarray: an expression cannot be pickled (its operands are distributed arrays)")


def settle(e):
    """Evaluate expression e into a new array and make e that array's value (an identity "cast"
    of it): e, and every tree that holds it, then read one array. Collective."""
    become(e, MATERIALIZE(e))


def become(e, a):
    """Make expression e the value of array a (of e's dtype and shape; an identity "cast"): the
    one form of a settled tree and of an assigned one. Local."""
    e.op, e.args, e.need, e.nodes, e.kids = "cast", (a,), 1, 1, 0


def weak_kind(x):
    """The kind of a Python scalar (NumPy's value-based rule: a scalar takes the array's type
    unless it is of a higher kind)."""
    if isinstance(x, (bool, np.bool_)):
        return "b"
    if isinstance(x, (numbers.Integral, np.integer)):
        return "i"
    return "f"


def dtype_of(x):
    """dtype of an operand, or None for a Python scalar."""
    if is_scalar(x):
        return None
    return x.dtype


def promote(a, b):
    """NumPy 1.x's result type of two operands, scalars weak."""
    da, db = dtype_of(a), dtype_of(b)
    if da is None and db is None:
        return np.result_type(a, b)
    if da is None:
        a, b, da, db = b, a, db, da
    if db is not None:
        return np.promote_types(da, db)
    k = weak_kind(b)
    if da.kind == "f":
        return da
    if da.kind == "i":
        return da if k in "bi" else np.dtype(np.float64)
    # a bool array
    return {"b": da, "i": np.dtype(np.int64), "f": np.dtype(np.float64)}[k]


def shape_of(x):
    return () if is_scalar(x) else tuple(x.shape)


def broadcast_shape(fn, args):
    shapes = [shape_of(a) for a in args if not is_scalar(a)]
    if not shapes:
        return ()
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"spmdarray.{fn}: operands could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes)) from None
    for s in shapes:
        if len(s) != len(out):
            raise NotImplementedError(
                f"spmdarray.{fn}: broadcasting an operand of shape {s} against {out} (fewer axes); "
                "same-rank broadcasting (extent-1 axes) is supported")
    return out


_FAST = frozenset(("add", "sub", "mul"))
ND = None  # spmdarray.ndarray (set by spmdarray/__init__.py): the common operand type, tested first


def _fast(op, x, y):
    """make(op, x, y) for the common cases, or None: +, - and * of two operands of one numeric
    dtype and one shape, or of one operand and a Python int (or float, for a floating operand).
    The result is what make's general path gives (NumPy's types); a statement in a loop builds
    its tree through here in a few microseconds."""
    tx, ty = type(x), type(y)
    if tx is float or tx is int:
        if not (ty is ND or ty is Expr or hasattr(y, "_h")):
            return None
        d = y.dtype
        if d.kind == "f" or (d.kind == "i" and tx is int):
            return Expr(op, (x, y), d, y.shape)
        return None
    if not (tx is ND or tx is Expr or hasattr(x, "_h")):
        return None
    if ty is float or ty is int:
        d = x.dtype
        if d.kind == "f" or (d.kind == "i" and ty is int):
            return Expr(op, (x, y), d, x.shape)
        return None
    if not (ty is ND or ty is Expr or hasattr(y, "_h")):
        return None
    d = x.dtype
    if d != y.dtype or d.kind == "b":
        return None
    shape = x.shape
    if shape != y.shape:
        return None
    return Expr(op, (x, y), d, shape)


def make(op, *args):
    """A node, with NumPy's result type (or NotImplementedError where spmdarray differs)."""
    if op in _FAST and len(args) == 2:
        e = _fast(op, args[0], args[1])
        if e is not None:
            return e
    fn = op
    for a in args:
        if not (is_scalar(a) or isinstance(a, Expr) or hasattr(a, "_h")):
            raise NotImplementedError(f"spmdarray.{fn}: an operand of type {type(a).__name__} (spmdarray arrays, "
                                      "expressions and Python scalars mix; NumPy arrays do not: use "
                                      "spmdarray.array(x) to distribute one)")
    shape = broadcast_shape(fn, args)
    if op in COMPARE or op in LOGICAL:
        if op in COMPARE:
            promote(*args)
        return Expr(op, args, np.dtype(np.bool_), shape)
    if op == "where":
        dt = promote(args[1], args[2])
        return Expr(op, args, dt, shape)
    if op in UNARY:
        dt = dtype_of(args[0])
        if dt is None:
            raise TypeError(f"spmdarray.{fn} of a scalar: use NumPy")
        if op in FLOAT_UNARY:
            if dt.kind == "b":
                raise NotImplementedError(f"spmdarray.{fn} of a bool array (NumPy gives float16)")
            if dt.kind == "i":
                dt = np.dtype(np.float64)
        if op == "neg" and dt.kind == "b":
            raise TypeError("spmdarray: negative of a bool array (NumPy: the - operator is not supported for "
                            "booleans; use ~ or logical_not)")
        return Expr(op, args, dt, shape)
    dt = promote(*args)
    if op == "div" and dt.kind in "bi":
        dt = np.dtype(np.float64)
    if dt.kind == "b":
        raise NotImplementedError(f"spmdarray.{fn} of bool operands (NumPy's logical meaning of + and * on "
                                  "booleans is not bound: use logical_or / logical_and)")
    if op == "pow" and dt.kind != "f":
        raise NotImplementedError("spmdarray.power of integers (bound for floating operands)")
    return Expr(op, args, dt, shape)


def optype(n):
    """The type a node computes in: its own for arithmetic, the operands' for comparisons, None
    for nodes that work in any type (logical operations on truth values)."""
    if n.op in COMPARE:
        return promote(*n.args)
    if n.op in LOGICAL:
        return None
    if n.op == "cast":
        return n.dtype
    return n.dtype


# widening that keeps every value and every comparison: a comparison may run in C instead
EXACT = {("int32", "float64"), ("int32", "int64"), ("float32", "float64")}


def fits(ot, c):
    """A node of operating type ot may run in a program of type c."""
    return ot is None or ot == c


def fits_compare(ot, c):
    return ot == c or ot.kind == "b" or (ot.name, c.name) in EXACT


def program_type(n, dst_dtype=None):
    """The type C of the program for tree n."""
    def first(x):
        if isinstance(x, Expr):
            ot = optype(x)
            if ot is not None and ot.kind != "b":
                return ot
            for a in x.args:
                r = first(a)
                if r is not None:
                    return r
            return None
        if is_scalar(x):
            return None
        return x.dtype if x.dtype.kind != "b" else None
    if not isinstance(n, Expr) and not is_scalar(n) and dst_dtype is not None and dst_dtype.kind != "b":
        return dst_dtype  # a copy: convert the operand, then copy in the destination's type
    c = first(n)
    if c is None:
        c = dst_dtype if dst_dtype is not None and dst_dtype.kind != "b" else np.dtype(np.int32)
    return c


class TooBig(Exception):
    pass


class Program:
    """A compiled tree: code (5 numbers an instruction), constants, operands (holders).

    sources: None, or (leaf_class, const_pos) for a program to be cached (see Cache): leaf_class
    maps id(array operand) to its class (the first position of that Python object among the
    tree's array operands), const_pos maps (id(parent node), argument index) to the scalar's
    position among the tree's scalars. Then operands are distinguished by class (the same Python
    object, not the same data: the key records only that), constants are never shared, and
    operand_src / const_src say where each slot's value comes from in any tree of the same key."""

    def __init__(self, c, sources=None):
        self.c = c
        self.code = []
        self.kf, self.ki = [], []
        self.consts = {}
        self.operands = []
        self.keys = {}
        self.free = list(range(_core.MAX_REGISTERS))
        self.used = 0
        self.sources = sources
        self.operand_src = []
        self.const_src = []  # (scalar position or -1, negate, literal)

    def alloc(self):
        if not self.free:
            raise TooBig("registers")
        self.free.sort()
        return self.free.pop(0)

    def emit(self, op, d, a=0, b=0, c=0):
        if len(self.code) // 5 >= _core.MAX_INSTRUCTIONS:
            raise TooBig("instructions")
        self.code += [CODE[op], d, a, b, c]

    def const(self, v, at=None, negate=False):
        """The slot of constant v (-v with negate); at: (parent node, argument index) of the scalar
        in the tree, None for a literal of the compiler's own."""
        if negate:
            v = -v
        if self.sources is not None:
            self.const_src.append((self.sources[1][(id(at[0]), at[1])] if at is not None else -1, negate, v))
            key = len(self.const_src)
        else:
            key = (type(v), v)
        if key not in self.consts:
            if len(self.consts) >= _core.MAX_CONSTANTS:
                raise TooBig("constants")
            self.consts[key] = len(self.consts)
            if self.c.kind == "f":
                self.kf.append(float(v))
            else:
                self.ki.append(int(v))
        return self.consts[key]

    def operand(self, h, x=None):
        if self.sources is not None:
            key = self.sources[0][id(x)]
        else:
            key = (h.parent_id, tuple(h.start), tuple(h.step), tuple(h.map), tuple(h.shape))
        if key not in self.keys:
            if len(self.operands) >= _core.MAX_OPERANDS:
                raise TooBig("operands")
            self.keys[key] = len(self.operands)
            self.operands.append(h)
            self.operand_src.append(key)
        return self.keys[key]


def need(n):
    return n.need if type(n) is Expr else 1


def _is_array(x):
    return type(x) is not Expr and not is_scalar(x)


def _scaled(n):
    """(array, scalar, argument index of the scalar) when n is scalar * array or array * scalar,
    else None."""
    if type(n) is Expr and n.op == "mul":
        x, y = n.args
        if is_scalar(x) and _is_array(y):
            return y, x, 0
        if is_scalar(y) and _is_array(x):
            return x, y, 1
    return None


def _terms(n, out):
    """The terms of a left-deep chain of additions and subtractions n, left to right:
    (node, parent, argument index, negated). Only left operands are flattened (a + (b + c)
    keeps (b + c) as one term): the sum's rounding is the tree's."""
    if type(n) is Expr and n.op in ("add", "sub"):
        _terms(n.args[0], out) if type(n.args[0]) is Expr and n.args[0].op in ("add", "sub") else \
            out.append((n.args[0], n, 0, False))
        out.append((n.args[1], n, 1, n.op == "sub"))
    return out


def gen_lin(p, terms, leaf, scale=None):
    """Emit op_lin instructions for the sum of terms (see _terms), times scale = (value, parent,
    index) when given; returns the result's register. Array terms and scalar * array terms are
    read by the instruction itself; the others are evaluated into registers first (in decreasing
    need). At most MAX_TERMS terms an instruction: a longer sum is continued from its first
    part's register (the same order of additions)."""
    regs = {}
    order = sorted((i for i, t in enumerate(terms) if not (_is_array(t[0]) or _scaled(t[0]))),
                   key=lambda i: -need(terms[i][0]))
    for i in order:
        regs[i] = gen(p, terms[i][0], leaf, terms[i][1], terms[i][2])
    items = []
    for i, (node, parent, idx, neg) in enumerate(terms):
        if i in regs:
            items.append((1, regs[i], p.const(-1, None) if neg else NONE))
            continue
        sc = _scaled(node)
        if sc is not None:
            x, v, vi = sc
            items.append((0, p.operand(leaf(x), x), p.const(v, (node, vi), neg)))
        else:
            items.append((0, p.operand(leaf(node), node), p.const(-1, None) if neg else NONE))
    d = regs[order[0]] if order else p.alloc()
    for i in order[1:]:
        p.free.append(regs[i])
    first = True
    while items:
        take = items[:_core.MAX_TERMS - (0 if first else 1)]
        items = items[len(take):]
        if not first:
            take = [(1, d, NONE)] + take
        k = p.const(scale[0], (scale[1], scale[2])) if scale is not None and not items else NONE
        p.emit("lin", d, len(take), k)
        for kind, idx, coef in take:
            p.emit("term", kind, idx, coef)
        first = False
    return d


def gen(p, n, leaf, parent=None, index=None):
    """Emit n into program p; returns its register. leaf(x) gives the holder of an array operand
    (converted to p.c when needed). parent, index: where n sits in the tree (for a scalar's
    constant slot)."""
    if is_scalar(n):
        r = p.alloc()
        p.emit("const", r, p.const(n, (parent, index) if parent is not None else None))
        return r
    if not isinstance(n, Expr):
        h = leaf(n)
        r = p.alloc()
        p.emit("load", r, p.operand(h, n))
        return r
    if n.dtype == p.c:
        # sums and differences (times a scalar) in one instruction: op_lin
        if n.op in ("add", "sub"):
            return gen_lin(p, _terms(n, []), leaf)
        if n.op == "mul":
            x, y = n.args
            if is_scalar(x) and type(y) is Expr and y.op in ("add", "sub") and y.dtype == p.c:
                return gen_lin(p, _terms(y, []), leaf, (x, n, 0))
            if is_scalar(y) and type(x) is Expr and x.op in ("add", "sub") and x.dtype == p.c:
                return gen_lin(p, _terms(x, []), leaf, (y, n, 1))
            if _scaled(n):
                return gen_lin(p, [(n, None, None, False)], leaf)
    order = sorted(range(len(n.args)), key=lambda i: -need(n.args[i]))
    regs = [None] * len(n.args)
    for i in order:
        regs[i] = gen(p, n.args[i], leaf, n, i)
    d = regs[order[0]]
    for i in order[1:]:
        p.free.append(regs[i])
    op = "lnot" if n.op == "lnot" else n.op
    if op == "cast":
        return d
    if op == "square":
        p.emit("mul", d, d, d)
        return d
    while len(regs) < 3:
        regs.append(0)
    p.emit(op, d, regs[0], regs[1], regs[2])
    return d


def leaf_key(a):
    """An array operand's part of a program's key: its dtype, its parent's rank, its shape and
    whether its parent has a halo (a program of operands without one never exchanges). Kept on
    the array (its selection never changes). Local."""
    h = a._h
    k = a._k = (a.dtype, h.parent_ndim, a.shape, h.has_halo)
    return k


def signature(n, with_sources=False):
    """The structure of tree n as a hashable key, its array operands (one per class, in class
    order) and its scalars (in tree order). Two trees of one key compile to the same program,
    operands and constants aside. with_sources: also the maps Program(sources=...) takes."""
    key = [n.op, n.dtype]
    add = key.append
    arrays = []
    scalars = []
    classes = {}
    cpos = {} if with_sources else None
    # pre-order, iteratively (a stack of the parents' argument iterators): a nested recursive
    # function would be a reference cycle holding the statement's operands (snapshot views among
    # them) until the garbage collector runs
    stack = []
    node, it = n, enumerate(n.args)
    while True:
        for i, a in it:
            t = type(a)
            if t is Expr:
                stack.append((node, it))
                add(a.op)
                add(a.dtype)
                node, it = a, enumerate(a.args)
                break
            if t is ND or not (t in _SCALARS or is_scalar(a)):
                c = classes.get(id(a))
                if c is None:
                    c = classes[id(a)] = len(arrays)
                    arrays.append(a)
                    add((c, a._k or leaf_key(a)))
                else:
                    add(c)
            else:
                if cpos is not None:
                    cpos[(id(node), i)] = len(scalars)
                add(t)
                scalars.append(a)
        else:
            add(None)
            if not stack:
                break
            node, it = stack.pop()
    if with_sources:
        return tuple(key), arrays, scalars, (classes, cpos)
    return tuple(key), arrays, scalars
