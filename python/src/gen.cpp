// Generated arrays of the binding: linspace, eye, and the counter-based random numbers
// (spmd::random), instantiated here for the element types gen.hpp names.

#include "gen.hpp"
#include "result.hpp"

#include <spmd/creation.hpp>
#include <spmd/random.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

namespace spmd::py {

namespace {
Label label_of(const DistributionOptions& o, const char* fallback) {
  return Label{o.label.empty() ? fallback : o.label};
}
}  // namespace

Holder linspace(DType dtype, const Comm& comm, double start, double stop, index_t num, bool endpoint,
                const DistributionOptions& o) {
  const auto opts =
      std::make_tuple(HaloWidth{o.halo}, Periodic{o.periodic}, ProcessGrid{o.dims}, label_of(o, "spmdarray"));
  auto make = [&](auto t) {
    using T = decltype(t);
    return std::apply(
        [&](const auto&... op) { return holder_of(spmd::linspace<T>(comm, start, stop, num, endpoint, op...)); }, opts);
  };
  if (dtype == DType::f64) return make(double{});
  if (dtype == DType::f32) return make(float{});
  throw Error::replicated(impl::str("spmdarray: internal error: linspace of ", dtype_name(dtype)));
}

Holder eye(DType dtype, const Comm& comm, index_t n, index_t m, index_t k, const DistributionOptions& o) {
  const auto opts =
      std::make_tuple(HaloWidth{o.halo}, Periodic{o.periodic}, ProcessGrid{o.dims}, label_of(o, "spmdarray"));
  return dispatch_parent(dtype, 1, [&](auto t, auto) -> Holder {
    using T = decltype(t);
    return std::apply([&](const auto&... op) { return holder_of(spmd::eye<T>(comm, n, m, k, op...)); }, opts);
  });
}

void random_fill(const Holder& h, RandomKind kind, std::uint64_t seed, std::uint64_t stream, double a, double b,
                 std::int64_t lo, std::int64_t hi) {
  if (!h.whole()) throw Error::replicated("spmdarray: internal error: random_fill of a view");
  const random::Generator g{seed, stream};
  dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> int {
    using T = decltype(t);
    const auto& x = h.array<T, decltype(pc)::value>();
    if constexpr (std::is_floating_point_v<T>) {
      if (kind == RandomKind::uniform) {
        random::uniform(x, g, static_cast<T>(a), static_cast<T>(b));
        return 0;
      }
      if (kind == RandomKind::normal) {
        random::normal(x, g, static_cast<T>(a), static_cast<T>(b));
        return 0;
      }
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (kind == RandomKind::integers) {
        random::integers(x, g, static_cast<T>(lo), static_cast<T>(hi));
        return 0;
      }
    }
    throw Error::replicated(
        impl::str("spmdarray: internal error: random draw ", static_cast<int>(kind), " into ", dtype_name(h.dtype())));
  });
  h.parent->halo_stale = true;
}

}  // namespace spmd::py
