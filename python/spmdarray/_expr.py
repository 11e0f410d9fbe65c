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

import numbers

import numpy as np

from . import _core

OPS = ["load", "const", "neg", "abs", "sqrt", "exp", "log", "sin", "cos", "lnot", "add", "sub", "mul",
       "div", "pow", "minimum", "maximum", "lt", "le", "gt", "ge", "eq", "ne", "land", "lor", "where"]
CODE = {name: i for i, name in enumerate(OPS)}
if list(_core.op_codes()) != list(range(len(OPS))):  # python/src/program.hpp's enum Op
    raise ImportError("spmdarray: _core's op codes differ from spmdarray/_expr.py's (a stale build)")

DTYPES = {np.dtype(np.float64): _core.DType.float64, np.dtype(np.float32): _core.DType.float32,
          np.dtype(np.int64): _core.DType.int64, np.dtype(np.int32): _core.DType.int32,
          np.dtype(np.bool_): _core.DType.bool}
NP_OF = {v: k for k, v in DTYPES.items()}

UNARY = {"neg", "abs", "sqrt", "exp", "log", "sin", "cos", "lnot"}
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


class Expr:
    """A lazy element-wise expression (see the module comment). Operators as on arrays."""

    __slots__ = ("op", "args", "dtype", "shape", "need")

    def __init__(self, op, args, dtype, shape):
        self.op, self.args, self.dtype, self.shape = op, args, dtype, shape
        # registers to evaluate it (Sethi-Ullman: children in decreasing need)
        ns = sorted((a.need if type(a) is Expr else 1 for a in args), reverse=True)
        self.need = max(x + i for i, x in enumerate(ns))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __bool__(self):
        raise ValueError("spmdarray: the truth value of an array expression is ambiguous (use any() or all(); "
                         "both are collective)")

    def __repr__(self):
        return f"spmdarray.Expr({self.op}, shape={self.shape}, dtype={self.dtype})"


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


def make(op, *args):
    """A node, with NumPy's result type (or NotImplementedError where spmdarray differs)."""
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
    """A compiled tree: code (5 numbers an instruction), constants, operands (holders)."""

    def __init__(self, c):
        self.c = c
        self.code = []
        self.kf, self.ki = [], []
        self.consts = {}
        self.operands = []
        self.keys = {}
        self.free = list(range(_core.MAX_REGISTERS))
        self.used = 0

    def alloc(self):
        if not self.free:
            raise TooBig("registers")
        self.free.sort()
        return self.free.pop(0)

    def emit(self, op, d, a=0, b=0, c=0):
        if len(self.code) // 5 >= _core.MAX_INSTRUCTIONS:
            raise TooBig("instructions")
        self.code += [CODE[op], d, a, b, c]

    def const(self, v):
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

    def operand(self, h):
        key = (h.parent_id, tuple(h.start), tuple(h.step), tuple(h.map), tuple(h.shape))
        if key not in self.keys:
            if len(self.operands) >= _core.MAX_OPERANDS:
                raise TooBig("operands")
            self.keys[key] = len(self.operands)
            self.operands.append(h)
        return self.keys[key]


def need(n):
    return n.need if type(n) is Expr else 1


def gen(p, n, leaf):
    """Emit n into program p; returns its register. leaf(x) gives the holder of an array operand
    (converted to p.c when needed)."""
    if is_scalar(n):
        r = p.alloc()
        p.emit("const", r, p.const(n))
        return r
    if not isinstance(n, Expr):
        h = leaf(n)
        r = p.alloc()
        p.emit("load", r, p.operand(h))
        return r
    order = sorted(range(len(n.args)), key=lambda i: -need(n.args[i]))
    regs = [None] * len(n.args)
    for i in order:
        regs[i] = gen(p, n.args[i], leaf)
    d = regs[order[0]]
    for i in order[1:]:
        p.free.append(regs[i])
    op = "lnot" if n.op == "lnot" else n.op
    if op == "cast":
        return d
    while len(regs) < 3:
        regs.append(0)
    p.emit(op, d, regs[0], regs[1], regs[2])
    return d
