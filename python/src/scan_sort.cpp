// Scans and sorting of the binding: spmd::cumsum / cumprod along an axis (float64, float32,
// int64 parents of 1-3 axes) and spmd::sort / argsort / unique of 1-D parents.

#include <spmd/scan.hpp>
#include <spmd/sort.hpp>

#include <type_traits>
#include <utility>

#include "result.hpp"
#include "shape.hpp"

namespace spmd::py {

Holder scan(ScanOp op, const Holder& h, int axis) {
  if (!h.whole()) throw Error::replicated("spmdarray: internal error: a scan of a view");
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> Holder {
    using T = decltype(t);
    const auto& a = h.array<T, decltype(pc)::value>();
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, std::int64_t>) {
      if (op == ScanOp::cumsum) return holder_of(spmd::cumsum(a, spmd::axis(axis)));
      return holder_of(spmd::cumprod(a, spmd::axis(axis)));
    } else {
      throw Error::replicated(impl::str("spmdarray: internal error: a scan of ", dtype_name(h.dtype())));
    }
  });
}

Holder sort(SortOp op, const Holder& h) {
  if (!h.whole() || h.prank() != 1) throw Error::replicated("spmdarray: internal error: sort of a view or N-d array");
  return dispatch_parent(h.dtype(), 1, [&](auto t, auto) -> Holder {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      const auto& a = h.array<T, 1>();
      if (op == SortOp::sort) return holder_of(spmd::sort(a));
      if (op == SortOp::argsort) return holder_of(spmd::argsort(a));
      return holder_of(spmd::unique(a));
    } else {
      throw Error::replicated("spmdarray: internal error: sort of bool");
    }
  });
}

}  // namespace spmd::py
