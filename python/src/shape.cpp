// Shape functions of the binding: spmd::reshape and spmd::transpose for every parent type (the
// other shape functions are views and slice assignments in python/spmdarray/__init__.py, as the
// library's own are).

#include <spmd/shape.hpp>

#include <utility>

#include "result.hpp"
#include "shape.hpp"

namespace spmd::py {

Holder reshape(const Holder& h, const std::vector<index_t>& shape) {
  if (!h.whole()) throw Error::replicated("spmdarray: internal error: reshape of a view");
  const std::size_t r = shape.size();
  if (r < 1 || r > 3) throw Error::replicated(impl::str("spmdarray: reshape to ", r, " axes (1 to 3 are bound)"));
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> Holder {
    using T = decltype(t);
    const auto& a = h.array<T, decltype(pc)::value>();
    if (r == 1) return holder_of(spmd::reshape(a, std::array<index_t, 1>{shape[0]}));
    if (r == 2) return holder_of(spmd::reshape(a, std::array<index_t, 2>{shape[0], shape[1]}));
    return holder_of(spmd::reshape(a, std::array<index_t, 3>{shape[0], shape[1], shape[2]}));
  });
}

Holder transpose(const Holder& h, const std::vector<int>& order) {
  if (!h.whole()) throw Error::replicated("spmdarray: internal error: transpose of a view");
  if (static_cast<int>(order.size()) != h.prank())
    throw Error::replicated("spmdarray: internal error: transpose needs one entry per axis");
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> Holder {
    using T = decltype(t);
    constexpr int P = decltype(pc)::value;
    Axes<P> ax;
    for (int k = 0; k < P; ++k) ax.list[static_cast<std::size_t>(k)] = order[static_cast<std::size_t>(k)];
    return holder_of(spmd::transpose(h.array<T, P>(), ax));
  });
}

}  // namespace spmd::py
