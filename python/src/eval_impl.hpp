#pragma once
// The bodies of assign_program / reduce_program for one program type C, included by
// eval_<type>.cpp (one translation unit per type: a change to one recompiles one, and two cores
// compile two at a time).

#include <spmd/expr.hpp>
#include <spmd/reduce.hpp>

#include <string>

#include "program.hpp"

namespace spmd::py {

template <class C, int M>
ProgExpr<C, M> make_program(const ProgramIn& p) {
  ProgExpr<C, M> e;
  if (p.ins.size() > static_cast<std::size_t>(kMaxIns) || p.operands.size() > static_cast<std::size_t>(kMaxOperands) ||
      p.kf.size() + p.ki.size() > static_cast<std::size_t>(kMaxConsts))
    throw Error::replicated(impl::str("spmdarray: the expression is too large for one program (", p.ins.size(),
                                      " instructions, ", p.operands.size(), " operands; at most ", kMaxIns, " and ",
                                      kMaxOperands, ")"));
  for (std::size_t i = 0; i < p.ins.size(); ++i) e.code.ins[i] = p.ins[i];
  e.code.n = static_cast<int>(p.ins.size());
  e.code.result = p.result;
  for (std::size_t i = 0; i < p.kf.size(); ++i) e.code.k[i] = static_cast<C>(p.kf[i]);
  for (std::size_t i = 0; i < p.ki.size(); ++i) e.code.k[i] = static_cast<C>(p.ki[i]);
  for (int j = 0; j < M; ++j) e.shape_[j] = p.shape[static_cast<std::size_t>(j)];
  int last = M;
  for (const Holder& h : p.operands) {
    if (h.dtype() != dtype_of<C>() || h.ndim != M || h.prank() < last)
      throw Error::replicated("spmdarray: internal error: program operands out of order");  // the Python side's
    last = h.prank();
    switch (h.prank()) {
      case 1:
        if constexpr (M <= 1) e.s1.push_back(h.template view<C, M, 1>());
        break;
      case 2:
        if constexpr (M <= 2) e.s2.push_back(h.template view<C, M, 2>());
        break;
      default:
        e.s3.push_back(h.template view<C, M, 3>());
        break;
    }
  }
  return e;
}

template <class C, class D, int M, int P>
void assign_typed(const Holder& dst, const ProgramIn& p) {
  auto e = make_program<C, M>(p);
  const auto v = dst.template view<D, M, P>();
  spmd::assign(v, e, Label{"spmdarray::assign"});
}

template <class C>
void assign_program(const Holder& dst, const ProgramIn& p) {
  const bool to_bool = dst.dtype() == DType::b;
  if (dst.dtype() != dtype_of<C>() && !to_bool)
    throw Error::replicated("spmdarray: internal error: destination type is neither the program's nor bool");
  auto go = [&](auto d) {
    using D = decltype(d);
    switch (dst.ndim * 4 + dst.prank()) {
      case 1 * 4 + 1:
        return assign_typed<C, D, 1, 1>(dst, p);
      case 1 * 4 + 2:
        return assign_typed<C, D, 1, 2>(dst, p);
      case 1 * 4 + 3:
        return assign_typed<C, D, 1, 3>(dst, p);
      case 2 * 4 + 2:
        return assign_typed<C, D, 2, 2>(dst, p);
      case 2 * 4 + 3:
        return assign_typed<C, D, 2, 3>(dst, p);
      default:
        return assign_typed<C, D, 3, 3>(dst, p);
    }
  };
  if (to_bool)
    go(bool{});
  else
    go(C{});
}

template <class C>
Scalar as_scalar(const C v) {
  Scalar s;
  if constexpr (std::is_floating_point_v<C>) {
    s.f = static_cast<double>(v);
  } else {
    s.i = static_cast<std::int64_t>(v);
    s.is_int = true;
  }
  return s;
}

template <class C, int M>
Scalar reduce_typed(Reduction r, const ProgramIn& p) {
  auto e = make_program<C, M>(p);
  if (e.template slots<M>().empty())
    throw Error::replicated("spmdarray: internal error: a reduction needs an operand of the expression's rank first");
  switch (r) {
    case Reduction::sum:
      return as_scalar<C>(spmd::sum(e));
    case Reduction::prod:
      return as_scalar<C>(spmd::prod(e));
    case Reduction::min:
      return as_scalar<C>(spmd::min(e));
    case Reduction::max:
      return as_scalar<C>(spmd::max(e));
    default:
      return as_scalar<std::int64_t>(spmd::count_nonzero(e));
  }
}

template <class C>
Scalar reduce_program(Reduction r, const ProgramIn& p) {
  switch (p.shape.size()) {
    case 1:
      return reduce_typed<C, 1>(r, p);
    case 2:
      return reduce_typed<C, 2>(r, p);
    default:
      return reduce_typed<C, 3>(r, p);
  }
}

#define SPMD_PY_INSTANTIATE_PROGRAM(C)                                    \
  template void assign_program<C>(const Holder& dst, const ProgramIn& p); \
  template Scalar reduce_program<C>(Reduction r, const ProgramIn& p);

}  // namespace spmd::py
