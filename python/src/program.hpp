#pragma once
// Fused expressions from Python: a precompiled interpreter over an expression's op codes, plugged
// into the C++ expression engine as one more kind of node (ProgExpr). The engine does what it
// does for a C++ expression - classifies every operand (read in place, through the halo, moved by
// a cached plan), detects a destination read at other positions (NumPy's aliasing rule: the lagged
// in-place form on hosts, a buffer on devices) and runs one kernel over the rank's box - and the
// node's device side evaluates the program:
//  - on host spaces a line (a row of the box) is evaluated in chunks of kChunk points: each
//    instruction runs over the whole chunk (a loop the compiler vectorises), the registers are
//    kChunk-long arrays in the line object, so a chunk is read from memory once and every operand
//    once per point (the traffic of the C++ fused kernel, plus register traffic in L1);
//  - on devices a line evaluates one point at a time (kChunk = 1): the same instructions, one
//    value per register, in the thread's registers.
// The engine's hooks for a node (bind, visit_terminals, first_terminal, terminal_count) are
// found by argument-dependent lookup and specialisation, as for its own nodes; nothing of the
// library changes.

#include <spmd/expr.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core.hpp"

namespace spmd::py {

/// Op codes (python/spmdarray/_expr.py writes them; keep the two in step).
enum Op : std::uint8_t {
  op_load = 0,   // d <- operand a
  op_const = 1,  // d <- constant a
  op_neg,
  op_abs,
  op_sqrt,
  op_exp,
  op_log,
  op_sin,
  op_cos,
  op_lnot,
  op_add,
  op_sub,
  op_mul,
  op_div,
  op_pow,
  op_minimum,
  op_maximum,
  op_lt,
  op_le,
  op_gt,
  op_ge,
  op_eq,
  op_ne,
  op_land,
  op_lor,
  op_where,  // d <- a ? b : c
  op_count
};
constexpr int kMaxIns = 32, kMaxRegs = 8, kMaxOperands = 8, kMaxConsts = 8;

struct Ins {
  std::uint8_t op, d, a, b, c;
};
/// A program: n instructions over registers; the value is register `result`.
template <class C>
struct Code {
  Ins ins[kMaxIns];
  C k[kMaxConsts];
  int n = 0;
  int result = 0;
};

/// Points per chunk: host spaces evaluate a line in chunks, devices point by point.
template <class Mem>
constexpr int chunk_of() {
  return impl::host_accessible<Mem>() ? 256 : 1;
}

template <class C, int B, bool Contig>
struct ProgLine {
  Code<C> code;
  impl::RowAccess<const C*, Contig> src[kMaxOperands];
  index_t len;  // points u with 0 <= u < len lie in the box
  mutable index_t c0, cn;
  mutable C reg[kMaxRegs][B];

  KOKKOS_FORCEINLINE_FUNCTION C operator()(const index_t i) const {
    if (i < c0 || i >= c0 + cn) fill(i);
    return reg[code.result][i - c0];
  }

  template <impl::BinOp O>
  KOKKOS_FORCEINLINE_FUNCTION static void bin(C* d, const C* x, const C* y, const index_t n) {
    SPMD_IMPL_INDEPENDENT_ITERATIONS  // d may be x or y: element j reads only element j
        for (index_t j = 0; j < n; ++j) d[j] = static_cast<C>(impl::Bin<O, C>::apply(x[j], y[j]));
  }
  template <impl::UnOp O>
  KOKKOS_FORCEINLINE_FUNCTION static void un(C* d, const C* x, const index_t n) {
    SPMD_IMPL_INDEPENDENT_ITERATIONS
    for (index_t j = 0; j < n; ++j) d[j] = static_cast<C>(impl::Un<O, C>::apply(x[j]));
  }

  KOKKOS_INLINE_FUNCTION void fill(const index_t i) const {
    const index_t n = (len - i < B) ? len - i : B;
    c0 = i;
    cn = n;
    for (int s = 0; s < code.n; ++s) {
      const Ins in = code.ins[s];
      C* d = reg[in.d];
      const C* x = reg[in.a];
      const C* y = reg[in.b];
      switch (in.op) {
        case op_load: {
          const auto r = src[in.a];
          SPMD_IMPL_INDEPENDENT_ITERATIONS
          for (index_t j = 0; j < n; ++j) d[j] = r(i + j);
          break;
        }
        case op_const: {
          const C v = code.k[in.a];
          for (index_t j = 0; j < n; ++j) d[j] = v;
          break;
        }
        case op_neg:
          un<impl::UnOp::neg>(d, x, n);
          break;
        case op_abs:
          un<impl::UnOp::abs>(d, x, n);
          break;
        case op_lnot:
          for (index_t j = 0; j < n; ++j) d[j] = static_cast<C>(!x[j]);
          break;
        case op_add:
          bin<impl::BinOp::add>(d, x, y, n);
          break;
        case op_sub:
          bin<impl::BinOp::sub>(d, x, y, n);
          break;
        case op_mul:
          bin<impl::BinOp::mul>(d, x, y, n);
          break;
        case op_minimum:
          bin<impl::BinOp::minimum>(d, x, y, n);
          break;
        case op_maximum:
          bin<impl::BinOp::maximum>(d, x, y, n);
          break;
        case op_lt:
          bin<impl::BinOp::lt>(d, x, y, n);
          break;
        case op_le:
          bin<impl::BinOp::le>(d, x, y, n);
          break;
        case op_gt:
          bin<impl::BinOp::gt>(d, x, y, n);
          break;
        case op_ge:
          bin<impl::BinOp::ge>(d, x, y, n);
          break;
        case op_eq:
          bin<impl::BinOp::eq>(d, x, y, n);
          break;
        case op_ne:
          bin<impl::BinOp::ne>(d, x, y, n);
          break;
        case op_land:
          bin<impl::BinOp::land>(d, x, y, n);
          break;
        case op_lor:
          bin<impl::BinOp::lor>(d, x, y, n);
          break;
        case op_where: {
          const C* z = reg[in.c];
          SPMD_IMPL_INDEPENDENT_ITERATIONS
          for (index_t j = 0; j < n; ++j) d[j] = x[j] ? y[j] : z[j];
          break;
        }
        default:
          if constexpr (std::is_floating_point_v<C>) {  // the Python side sends these to floats only
            switch (in.op) {
              case op_sqrt:
                un<impl::UnOp::sqrt>(d, x, n);
                break;
              case op_exp:
                un<impl::UnOp::exp>(d, x, n);
                break;
              case op_log:
                un<impl::UnOp::log>(d, x, n);
                break;
              case op_sin:
                un<impl::UnOp::sin>(d, x, n);
                break;
              case op_cos:
                un<impl::UnOp::cos>(d, x, n);
                break;
              case op_div:
                bin<impl::BinOp::div>(d, x, y, n);
                break;
              case op_pow:
                bin<impl::BinOp::pow>(d, x, y, n);
                break;
              default:
                break;
            }
          }
          break;
      }
    }
  }
};

/// The device side of a ProgExpr on this rank: the operands' addressing (in the engine's binding
/// order), the program, and the box's extents (a line along axis A from local point k has
/// ext[A] - k[A] points: a chunk never reads past the box).
template <class C, int M, class Mem>
struct ProgDev {
  static constexpr int B = chunk_of<Mem>();
  Code<C> code;
  impl::TermDev<C, M> src[kMaxOperands];
  int nsrc;
  Kokkos::Array<index_t, M> ext;
  template <int A, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION ProgLine<C, B, Contig> line(const K& k) const {
    ProgLine<C, B, Contig> r;
    r.code = code;
    for (int t = 0; t < nsrc; ++t) r.src[t] = src[t].template line<A, Contig>(k);
    r.len = ext[A] - k[A];
    r.c0 = 0;
    r.cn = 0;
    return r;
  }
};

template <int M, int P>
struct Empty {};
template <class C, int M, int P, class Mem>
using SlotVec = std::conditional_t<(P >= M), std::vector<ArrayView<C, M, P, Mem>>, Empty<M, P>>;

/// The host node: the program and its operands, grouped by parent rank (P = M first, then the
/// parents with more axes: views that dropped some). Operand t of the program is the t-th
/// visited (the Python side orders them so).
template <class C, int M, class Mem = DefaultMemorySpace>
struct ProgExpr {
  using spmd_expression = void;
  using value_type = C;
  using memory_space = Mem;
  static constexpr int rank = M;
  Code<C> code;
  SlotVec<C, M, 1, Mem> s1;
  SlotVec<C, M, 2, Mem> s2;
  SlotVec<C, M, 3, Mem> s3;
  Index<M> shape_;
  Kokkos::Array<index_t, M> ext{};  // this rank's box (destination or first operand)
  const Index<M>& shape() const { return shape_; }
  template <int P>
  auto& slots() {
    if constexpr (P == 1)
      return s1;
    else if constexpr (P == 2)
      return s2;
    else
      return s3;
  }
  template <int P>
  const auto& slots() const {
    return const_cast<ProgExpr*>(this)->template slots<P>();
  }
  template <class F>
  void visit(F& f) const {
    for (const auto& v : slots<M>()) f(v);
    if constexpr (M < 2)
      for (const auto& v : s2) f(v);
    if constexpr (M < 3)
      for (const auto& v : s3) f(v);
  }
};

template <class C, int M, class Mem, class F>
void visit_terminals(const ProgExpr<C, M, Mem>& e, F& f) {
  e.visit(f);
}
template <class C, int M, class Mem>
const ArrayView<C, M, M, Mem>& first_terminal(const ProgExpr<C, M, Mem>& e) {
  return e.template slots<M>().front();  // the Python side materialises first when it is empty
}
template <class C, int M, class Mem, int Mb, std::size_t K>
ProgDev<C, Mb, Mem> bind(const ProgExpr<C, M, Mem>& e, impl::Binding<Mb, K>& b) {
  static_assert(M == Mb, "spmd::py: a program has the rank of its destination");
  ProgDev<C, Mb, Mem> d;
  d.code = e.code;
  d.nsrc = 0;
  auto one = [&](const auto&) {
    const impl::Source<Mb>& s = b.sources[b.next++];
    d.src[d.nsrc++] = impl::TermDev<C, Mb>{static_cast<const C*>(s.data), s.coef};
  };
  e.visit(one);
  d.ext = e.ext;
  return d;
}

}  // namespace spmd::py

namespace spmd::impl {
template <class C, int M, class Mem>
struct terminal_count<py::ProgExpr<C, M, Mem>> : std::integral_constant<std::size_t, py::kMaxOperands> {};
}  // namespace spmd::impl

namespace spmd::py {

/// What eval_<type>.cpp exports: the program and its operands as the Python side sends them.
struct ProgramIn {
  std::vector<Ins> ins;
  std::vector<double> kf;        // constants (floating programs)
  std::vector<std::int64_t> ki;  // constants (integer programs)
  int result = 0;
  std::vector<Holder> operands;  // of the program's type, ordered: parent rank M first
  std::vector<index_t> shape;    // the expression's shape
};

/// dst = program, in one pass (NumPy's aliasing rule). Collective. dst.dtype() is the program's
/// type C or bool.
template <class C>
void assign_program(const Holder& dst, const ProgramIn& p);

enum class Reduction : int { sum = 0, prod, min, max, count_nonzero };
/// A reduction's result: a float (floating programs) or an integer (integer programs, counts).
struct Scalar {
  double f = 0;
  std::int64_t i = 0;
  bool is_int = false;
};
/// The reduction of the program's values. Collective.
template <class C>
Scalar reduce_program(Reduction r, const ProgramIn& p);

}  // namespace spmd::py
