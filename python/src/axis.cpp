// Per-axis reductions of the binding: spmd::sum(a, axes, keepdims) ... spmd::argmax for every
// parent type the Python layer passes (see axis.hpp), each a keepdims array (the Python layer
// drops the reduced axes). One translation unit, so that module.cpp and the fused kernels do not
// recompile for it.

#include "axis.hpp"
#include "result.hpp"

#include <spmd/axis_reduce.hpp>

#include <type_traits>
#include <utility>

namespace spmd::py {

namespace {

[[noreturn]] void unsupported(AxisOp op, DType d) {
  throw Error::replicated(impl::str("spmdarray: internal error: per-axis reduction ", static_cast<int>(op), " of ",
                                    dtype_name(d), " is not instantiated"));
}

template <class T, int P, int K>
Holder reduce_k(AxisOp op, const Array<T, P>& a, const std::vector<int>& list, index_t ddof) {
  Axes<K> ax;
  for (int k = 0; k < K; ++k) ax.list[static_cast<std::size_t>(k)] = list[static_cast<std::size_t>(k)];
  constexpr bool fp = std::is_floating_point_v<T>;
  constexpr bool is_bool = std::is_same_v<T, bool>;
  switch (op) {
    case AxisOp::sum:
      if constexpr (fp || std::is_same_v<T, std::int64_t>) return holder_of(spmd::sum(a, ax, keepdims));
      break;
    case AxisOp::prod:
      if constexpr (fp || std::is_same_v<T, std::int64_t>) return holder_of(spmd::prod(a, ax, keepdims));
      break;
    case AxisOp::min:
      if constexpr (!is_bool) return holder_of(spmd::min(a, ax, keepdims));
      break;
    case AxisOp::max:
      if constexpr (!is_bool) return holder_of(spmd::max(a, ax, keepdims));
      break;
    case AxisOp::mean:
      if constexpr (fp) return holder_of(spmd::mean(a, ax, keepdims));
      break;
    case AxisOp::var:
      if constexpr (fp) return holder_of(spmd::var(a, ax, keepdims, ddof));
      break;
    case AxisOp::std:
      if constexpr (fp) return holder_of(spmd::std(a, ax, keepdims, ddof));
      break;
    case AxisOp::any:
      if constexpr (is_bool) return holder_of(spmd::any_of(a, ax, keepdims));
      break;
    case AxisOp::all:
      if constexpr (is_bool) return holder_of(spmd::all_of(a, ax, keepdims));
      break;
    case AxisOp::argmin:
      if constexpr (!is_bool && K == 1) return holder_of(spmd::argmin(a, ax, keepdims));
      break;
    case AxisOp::argmax:
      if constexpr (!is_bool && K == 1) return holder_of(spmd::argmax(a, ax, keepdims));
      break;
  }
  unsupported(op, dtype_of<T>());
}

}  // namespace

Holder axis_reduce(AxisOp op, const Holder& h, const std::vector<int>& axes, index_t ddof) {
  if (!h.whole()) throw Error::replicated("spmdarray: internal error: a per-axis reduction of a view");
  const int k = static_cast<int>(axes.size());
  if (k < 1 || k > h.prank())
    throw Error::replicated(impl::str("spmdarray: internal error: ", k, " axes for ", h.prank()));
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> Holder {
    using T = decltype(t);
    constexpr int P = decltype(pc)::value;
    const auto& a = h.array<T, P>();
    if (k == 1) return reduce_k<T, P, 1>(op, a, axes, ddof);
    if constexpr (P >= 2)
      if (k == 2) return reduce_k<T, P, 2>(op, a, axes, ddof);
    if constexpr (P >= 3) return reduce_k<T, P, 3>(op, a, axes, ddof);
    unsupported(op, dtype_of<T>());
  });
}

}  // namespace spmd::py
