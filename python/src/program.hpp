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
//  - on devices a line evaluates a device item's points together (kChunk = 1, ProgPoint): the
//    same instructions, one value per point in each register, so that an operand's loads for the
//    item's points are in flight at once; the program is read where the kernel's node holds it
//    (a pointer), never copied into a line.
// The engine's hooks for a node (bind, visit_terminals, first_terminal, terminal_count) are
// found by argument-dependent lookup and specialisation, as for its own nodes; a host line offers
// its chunks to the engine's row loops (spmd_runs, run(): impl::has_runs), so that the store is a
// vectorised loop too.

#include <spmd/expr.hpp>

#include <cstddef>
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
  // d <- K * (c_0 x_0 + c_1 x_1 + ... + c_{a-1} x_{a-1}), summed left to right: a (1 to kMaxTerms)
  // op_term pseudo-instructions follow, one a term; K is constant b (kNone: no scaling)
  op_lin,
  op_term,  // a term of the op_lin before it: x is operand a (d == 0) or register a (d == 1);
            // c_t is constant b (kNone: the term is x as it is)
  op_count
};
constexpr int kMaxIns = 32, kMaxRegs = 8, kMaxOperands = 8, kMaxConsts = 16, kMaxTerms = 8;
constexpr std::uint8_t kNone = 255;

struct Ins {
  std::uint8_t op, d, a, b, c;
};

/// How many registers an instruction reads (a, then b, then c), op_load, op_const and op_lin aside.
constexpr int register_reads(const std::uint8_t op) {
  return op == op_where ? 3 : (op >= op_add && op <= op_lor) ? 2 : (op >= op_neg && op <= op_lnot) ? 1 : 0;
}

/// Whether instructions [0, n) form a program the interpreter can run with its value in register
/// `result`: indices in range, every op_lin followed by its terms, and no register read before an
/// instruction has written it (the device line's registers start undefined). Local.
inline bool valid_program(const Ins* ins, const std::size_t n, const std::size_t nops, const std::size_t nconsts,
                          const int result) {
  auto konst = [&](const std::uint8_t k) { return k == kNone || k < nconsts; };
  unsigned written = 0;
  auto has = [&](const std::uint8_t r) { return r < kMaxRegs && ((written >> r) & 1u) != 0; };
  for (std::size_t s = 0; s < n; ++s) {
    const Ins& in = ins[s];
    if (in.op >= op_count || in.op == op_term || in.d >= kMaxRegs) return false;
    if (in.op == op_load) {
      if (in.a >= nops) return false;
    } else if (in.op == op_const) {
      if (in.a >= nconsts) return false;
    } else if (in.op == op_lin) {
      if (in.a < 1 || in.a > kMaxTerms || s + in.a >= n || !konst(in.b)) return false;
      for (std::size_t t = s + 1; t <= s + in.a; ++t)
        if (ins[t].op != op_term || ins[t].d > 1 || (ins[t].d ? !has(ins[t].a) : ins[t].a >= nops) || !konst(ins[t].b))
          return false;
      s += in.a;
    } else {
      const int reads = register_reads(in.op);
      if ((reads > 0 && !has(in.a)) || (reads > 1 && !has(in.b)) || (reads > 2 && !has(in.c))) return false;
    }
    written |= 1u << in.d;
  }
  return result >= 0 && result < kMaxRegs && has(static_cast<std::uint8_t>(result));
}
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

template <class C, bool Coef, bool Contig>
KOKKOS_FORCEINLINE_FUNCTION C lin_term(const C* q, const index_t st, const C c, const index_t j) {
  const C v = Contig ? q[j] : q[j * st];
  return Coef ? static_cast<C>(c * v) : v;
}

/// K * sum_t c_t x_t[j] for j < n, summed left to right (x_t: a register or an operand's row from
/// the chunk's first point, element j at x_t[j * step_t]; Contig: steps 1). Coef: the c_t apply.
template <class C, int N, bool Coef, bool Contig>
KOKKOS_FORCEINLINE_FUNCTION void lin_loop(C* d, const C* const* x, const index_t* step, const C* cf, const C K,
                                          const bool scale, const index_t n) {
  const C* q[N];
  index_t st[N];
  C c[N];
  for (int t = 0; t < N; ++t) {
    q[t] = x[t];
    st[t] = Contig ? 1 : step[t];
    c[t] = cf[t];
  }
  if (scale) {
    SPMD_IMPL_INDEPENDENT_ITERATIONS  // d may be a term's register: element j reads only element j
        for (index_t j = 0; j < n; ++j) {
      C s = lin_term<C, Coef, Contig>(q[0], st[0], c[0], j);
      for (int t = 1; t < N; ++t) s = static_cast<C>(s + lin_term<C, Coef, Contig>(q[t], st[t], c[t], j));
      d[j] = static_cast<C>(K * s);
    }
  } else {
    SPMD_IMPL_INDEPENDENT_ITERATIONS
    for (index_t j = 0; j < n; ++j) {
      C s = lin_term<C, Coef, Contig>(q[0], st[0], c[0], j);
      for (int t = 1; t < N; ++t) s = static_cast<C>(s + lin_term<C, Coef, Contig>(q[t], st[t], c[t], j));
      d[j] = s;
    }
  }
}

template <class C, bool Contig, int N>
KOKKOS_FORCEINLINE_FUNCTION void lin_n(C* d, const C* const* x, const index_t* step, const C* cf, const bool coef,
                                       const C K, const bool scale, const index_t n) {
  if (coef)
    lin_loop<C, N, true, Contig>(d, x, step, cf, K, scale, n);
  else
    lin_loop<C, N, false, Contig>(d, x, step, cf, K, scale, n);
}

template <class C, int B, bool Contig>
struct ProgLine {
  const Code<C>* code;  // the node's (ProgDev's): read in place, not copied into every line
  impl::RowAccess<const C*, Contig> src[kMaxOperands];
  index_t len;  // points u with 0 <= u < len lie in the box
  // the chunk held: points [c0, end), point u's value at cur[u - c0] (one compare a point)
  mutable index_t c0, end;
  mutable const C* cur;
  mutable C reg[kMaxRegs][B];

  KOKKOS_FORCEINLINE_FUNCTION C operator()(const index_t i) const {
    if (i >= end || i < c0) fill(i);
    return cur[i - c0];
  }
  // The engine's row loops take a host line's values a chunk at a time (impl::has_runs): the
  // store or fold is then a loop over the chunk, vectorised, not one call a point.
  static constexpr bool spmd_runs = B > 1;
  KOKKOS_FORCEINLINE_FUNCTION const C* run(const index_t i, index_t& n) const {
    fill(i);
    n = end - c0;
    return cur;
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

  /// op_lin at instruction s (its terms follow) over points [i, i + n).
  KOKKOS_INLINE_FUNCTION void lin(const int s, const index_t i, const index_t n) const {
    const Ins in = code->ins[s];
    const C* x[kMaxTerms] = {};
    index_t step[kMaxTerms] = {};
    C cf[kMaxTerms] = {};
    bool coef = false;
    for (int t = 0; t < in.a; ++t) {
      const Ins& u = code->ins[s + 1 + t];
      if (u.d) {
        x[t] = reg[u.a];
        step[t] = 1;
      } else {
        x[t] = &src[u.a](i);
        step[t] = src[u.a].c;
      }
      coef = coef || u.b != kNone;
      cf[t] = u.b != kNone ? code->k[u.b] : C(1);
    }
    const bool scale = in.b != kNone;
    const C K = scale ? code->k[in.b] : C(1);
    C* d = reg[in.d];
    switch (in.a) {
      case 1:
        return lin_n<C, Contig, 1>(d, x, step, cf, coef, K, scale, n);
      case 2:
        return lin_n<C, Contig, 2>(d, x, step, cf, coef, K, scale, n);
      case 3:
        return lin_n<C, Contig, 3>(d, x, step, cf, coef, K, scale, n);
      case 4:
        return lin_n<C, Contig, 4>(d, x, step, cf, coef, K, scale, n);
      case 5:
        return lin_n<C, Contig, 5>(d, x, step, cf, coef, K, scale, n);
      case 6:
        return lin_n<C, Contig, 6>(d, x, step, cf, coef, K, scale, n);
      case 7:
        return lin_n<C, Contig, 7>(d, x, step, cf, coef, K, scale, n);
      default:
        return lin_n<C, Contig, 8>(d, x, step, cf, coef, K, scale, n);
    }
  }

  KOKKOS_INLINE_FUNCTION void fill(const index_t i) const {
    const index_t n = (len - i < B) ? len - i : B;
    c0 = i;
    end = i + n;
    cur = reg[code->result];
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    if constexpr (B > 1) {  // host: an operand loaded on its own is one stream at a time; prefetch its
      // next chunk so that its lines are on their way while the chunk's other instructions run
      if (i + B < len) {
        const index_t m = (len - i - B < B) ? len - i - B : B;
        for (int s = 0; s < code->n; ++s)
          if (code->ins[s].op == op_load) {
            const auto r = src[code->ins[s].a];
            for (index_t j = 0; j < m; j += static_cast<index_t>(64 / sizeof(C))) __builtin_prefetch(&r(i + B + j));
          }
      }
    }
#endif
    for (int s = 0; s < code->n; ++s) {
      const Ins in = code->ins[s];
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
          const C v = code->k[in.a];
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
        case op_lin:
          lin(s, i, n);
          s += in.a;  // its terms
          break;
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

/// Devices (B = 1): no chunk state, and one compact loop over the instructions (an op_lin's
/// terms a run-time loop), so the kernels stay small. The program and the operands' addressing
/// are read where the kernel's node holds them (constant memory for these kernels' functors),
/// never copied into the line: only the point k is the line's own, so nothing but the registers
/// lives in a thread's local memory. A device item's P points are evaluated together (values<P>,
/// the engine's has_points hook): each instruction runs for all P, so an operand's P loads are
/// in flight at once (one interpreted point at a time leaves one load in flight per thread, and
/// the memory's latency, not its bandwidth, bounds the kernel). The same operations in the same
/// order as the host's loops. A = the line's axis.
template <class C, int M, int A>
struct ProgPoint {
  const Code<C>* code;
  const impl::TermDev<C, M>* src;
  Kokkos::Array<index_t, M> k;
  static constexpr bool spmd_points = true;

  /// Operand t's address offset at the line's point i. (The loads are written out where they are
  /// issued: a shared load<P> helper measured slower on an H200 with the column form's, ee8c4ad.)
  KOKKOS_FORCEINLINE_FUNCTION index_t offset(const int t, const index_t i) const {
    const impl::TermDev<C, M>& x = src[t];
    index_t off = x.coef[A] * i;
    for (int d = 0; d < M; ++d) off += x.coef[d] * k[d];
    return off;
  }

  template <impl::BinOp O>
  KOKKOS_FORCEINLINE_FUNCTION static C bin(const C x, const C y) {
    return static_cast<C>(impl::Bin<O, C>::apply(x, y));
  }
  template <impl::UnOp O>
  KOKKOS_FORCEINLINE_FUNCTION static C un(const C x) {
    return static_cast<C>(impl::Un<O, C>::apply(x));
  }
  template <impl::BinOp O, int P>
  KOKKOS_FORCEINLINE_FUNCTION static void bins(C* d, const C* x, const C* y) {
    for (int u = 0; u < P; ++u) d[u] = bin<O>(x[u], y[u]);
  }
  template <impl::UnOp O, int P>
  KOKKOS_FORCEINLINE_FUNCTION static void uns(C* d, const C* x) {
    for (int u = 0; u < P; ++u) d[u] = un<O>(x[u]);
  }

  KOKKOS_INLINE_FUNCTION C operator()(const index_t i) const {
    C v[1];
    values<1>(i, 1, v);
    return v[0];
  }

  /// The values of points i0 + u di, u < P (all inside the box).
  template <int P>
  KOKKOS_INLINE_FUNCTION void values(const index_t i0, const index_t di, C (&out)[P]) const {
    const Code<C>& p = *code;
    C r[kMaxRegs][P];  // valid_program: every register is written before it is read
    for (int s = 0; s < p.n; ++s) {
      const Ins in = p.ins[s];
      C* d = r[in.d];
      const C* x = r[in.a];
      const C* y = r[in.b];
      switch (in.op) {
        case op_load: {
          const C* q = src[in.a].p + offset(in.a, i0);
          const index_t st = src[in.a].coef[A] * di;
          C w[P];
          for (int u = 0; u < P; ++u) w[u] = q[u * st];  // the P loads first, then the stores
          for (int u = 0; u < P; ++u) d[u] = w[u];
          break;
        }
        case op_const:
          for (int u = 0; u < P; ++u) d[u] = p.k[in.a];
          break;
        case op_lin: {
          C acc[P];
          for (int t = 0; t < in.a; ++t) {
            const Ins m = p.ins[s + 1 + t];
            C w[P];
            if (m.d) {
              for (int u = 0; u < P; ++u) w[u] = r[m.a][u];
            } else {
              const C* q = src[m.a].p + offset(m.a, i0);
              const index_t st = src[m.a].coef[A] * di;
              for (int u = 0; u < P; ++u) w[u] = q[u * st];
            }
            if (m.b != kNone)
              for (int u = 0; u < P; ++u) w[u] = static_cast<C>(p.k[m.b] * w[u]);
            for (int u = 0; u < P; ++u) acc[u] = t == 0 ? w[u] : static_cast<C>(acc[u] + w[u]);
          }
          for (int u = 0; u < P; ++u) d[u] = in.b != kNone ? static_cast<C>(p.k[in.b] * acc[u]) : acc[u];
          s += in.a;  // its terms
          break;
        }
        case op_neg:
          uns<impl::UnOp::neg, P>(d, x);
          break;
        case op_abs:
          uns<impl::UnOp::abs, P>(d, x);
          break;
        case op_lnot:
          for (int u = 0; u < P; ++u) d[u] = static_cast<C>(!x[u]);
          break;
        case op_add:
          bins<impl::BinOp::add, P>(d, x, y);
          break;
        case op_sub:
          bins<impl::BinOp::sub, P>(d, x, y);
          break;
        case op_mul:
          bins<impl::BinOp::mul, P>(d, x, y);
          break;
        case op_minimum:
          bins<impl::BinOp::minimum, P>(d, x, y);
          break;
        case op_maximum:
          bins<impl::BinOp::maximum, P>(d, x, y);
          break;
        case op_lt:
          bins<impl::BinOp::lt, P>(d, x, y);
          break;
        case op_le:
          bins<impl::BinOp::le, P>(d, x, y);
          break;
        case op_gt:
          bins<impl::BinOp::gt, P>(d, x, y);
          break;
        case op_ge:
          bins<impl::BinOp::ge, P>(d, x, y);
          break;
        case op_eq:
          bins<impl::BinOp::eq, P>(d, x, y);
          break;
        case op_ne:
          bins<impl::BinOp::ne, P>(d, x, y);
          break;
        case op_land:
          bins<impl::BinOp::land, P>(d, x, y);
          break;
        case op_lor:
          bins<impl::BinOp::lor, P>(d, x, y);
          break;
        case op_where: {
          const C* z = r[in.c];
          for (int u = 0; u < P; ++u) d[u] = x[u] ? y[u] : z[u];
          break;
        }
        default:
          if constexpr (std::is_floating_point_v<C>) {  // the Python side sends these to floats only
            switch (in.op) {
              case op_sqrt:
                uns<impl::UnOp::sqrt, P>(d, x);
                break;
              case op_exp:
                uns<impl::UnOp::exp, P>(d, x);
                break;
              case op_log:
                uns<impl::UnOp::log, P>(d, x);
                break;
              case op_sin:
                uns<impl::UnOp::sin, P>(d, x);
                break;
              case op_cos:
                uns<impl::UnOp::cos, P>(d, x);
                break;
              case op_div:
                bins<impl::BinOp::div, P>(d, x, y);
                break;
              case op_pow:
                bins<impl::BinOp::pow, P>(d, x, y);
                break;
              default:
                break;
            }
          }
          break;
      }
    }
    for (int u = 0; u < P; ++u) out[u] = r[p.result][u];
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
  KOKKOS_FORCEINLINE_FUNCTION auto line(const K& k) const {
    if constexpr (B > 1) {
      ProgLine<C, B, Contig> r;
      r.code = &code;
      for (int t = 0; t < nsrc; ++t) r.src[t] = src[t].template line<A, Contig>(k);
      r.len = ext[A] - k[A];
      r.c0 = 0;
      r.end = 0;
      r.cur = nullptr;
      return r;
    } else {
      ProgPoint<C, M, A> r;
      r.code = &code;
      r.src = src;
      for (int d = 0; d < M; ++d) r.k[d] = k[d];
      return r;
    }
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
  d.ext = b.extent;  // the box's, or the part's the engine evaluates (impl::assign_split)
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
