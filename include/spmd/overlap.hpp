#pragma once
/// \file overlap.hpp
/// Halo exchanges that overlap computation: the split-phase exchange on the library's side
/// instance (a CUDA stream of its own) while the interior of an expression assignment is
/// computed, then the boundary once the halo has arrived.
///
///   auto pending = spmd::halo_begin_overlapped(grid, spmd::Pattern::face);
///   spmd::assign(pending, next(in, in), 0.2 * (grid(in, in) + grid(n, in) + ...));
///   // = spmd::exchange_halo(grid, face); next(in, in) = 0.2 * (...), the same values bit for bit
///
/// halo_begin_overlapped(exec, a, pattern) starts a's exchange on impl::side_instance() after the
/// work already queued on `exec` (a CUDA event: the host does not wait); spmd::assign(exec,
/// pending, dst, e) evaluates the points of dst whose in-place operands read no halo while the
/// exchange is in flight, ends it (queueing `exec` behind its unpack) and evaluates the rest (at
/// most 2 slabs per axis). An in-place update (dst read at other positions) or a destination
/// that the exchange is moving goes through the assignment's buffer, copied back after the end.
/// `pending` is a HaloRequest (Array's exchange) or a HaloExchange plan begun on another instance
/// (begin_overlapped). On host spaces the side instance is a default instance: the result is the
/// same, the exchange runs before the interior (MPI may progress meanwhile).

#include <type_traits>

#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/halo.hpp"
#include "spmd/impl/overlap_eval.hpp"

namespace spmd {

namespace impl {
template <class P>
struct is_pending : std::false_type {};
template <class T, int N, class M>
struct is_pending<HaloRequest<T, N, M>> : std::true_type {};
template <class T, int N, class M>
struct is_pending<HaloExchange<T, N, M>> : std::true_type {};

template <class Exec, class Pending, class Dst, class Src>
void assign_pending(const Exec& exec, Pending& pending, const Dst& dst, const Src& src, const char* label) {
  constexpr const char* fn = "spmd::assign";
  if constexpr (is_array<Dst>::value) {
    assign_pending(exec, pending, spmd::view_of(dst), src, label);
  } else {
    static_assert(is_view<Dst>::value, "spmd::assign: the destination is an Array or an ArrayView");
    static_assert(std::is_same_v<Exec, typename Dst::execution_space>,
                  "spmd::assign: the execution space instance must be of the destination's execution space");
    using T = typename Dst::value_type;
    if constexpr (is_scalar_v<Src>) {
      static_assert(is_complex_v<T> || !is_complex_v<Src>, SPMD_COMPLEX_TO_REAL);
      assign_overlapped(exec, pending, dst, ScalarExpr<T>{static_cast<T>(src)}, fn, label);
    } else {
      static_assert(is_operand_v<Src>, "spmd::assign: the source is a scalar, an Array, a view or an expression");
      assign_overlapped(exec, pending, dst, as_node(src), fn, label);
    }
  }
}
}  // namespace impl

/// Start `a`'s halo exchange (pattern, full width) on the library's side instance, after the work
/// queued on `exec` so far; finish it with spmd::assign(exec, request, ...) or request.end(exec).
/// Neighbour-collective.
template <class T, int N, class M>
HaloRequest<T, N, M> halo_begin_overlapped(const typename Array<T, N, M>::execution_space& exec,
                                           const Array<T, N, M>& a, Pattern pattern = Pattern::box) {
  using Exec = typename Array<T, N, M>::execution_space;
  const Exec side = impl::side_instance<Exec>();
  impl::order_after(side, exec);
  return spmd::halo_begin(side, a, pattern);
}
/// halo_begin_overlapped() after the work queued on a default instance. Neighbour-collective.
template <class T, int N, class M>
HaloRequest<T, N, M> halo_begin_overlapped(const Array<T, N, M>& a, Pattern pattern = Pattern::box) {
  return halo_begin_overlapped(typename Array<T, N, M>::execution_space(), a, pattern);
}

/// plan.begin(arrays...) on the library's side instance, after the work queued on `exec`; finish
/// with spmd::assign(exec, plan, ...) or plan.end(exec). Neighbour-collective.
template <class T, int N, class M, class... A>
void begin_overlapped(const typename HaloExchange<T, N, M>::execution_space& exec, HaloExchange<T, N, M>& plan,
                      const A&... arrays) {
  using Exec = typename HaloExchange<T, N, M>::execution_space;
  const Exec side = impl::side_instance<Exec>();
  impl::order_after(side, exec);
  plan.begin(side, arrays...);
}

///@{
/// dst = src (as spmd::assign), overlapped with the exchange `pending` has in progress: the
/// interior first, then pending.end(exec), then the points that read the halo (see the file
/// comment). The same values as ending the exchange first. Collective over dst's communicator.
template <class Exec, class Pending, class Dst, class Src,
          std::enable_if_t<Kokkos::is_execution_space<Exec>::value && impl::is_pending<Pending>::value, int> = 0>
void assign(const Exec& exec, Pending& pending, const Dst& dst, const Src& src) {
  impl::assign_pending(exec, pending, dst, src, nullptr);
}
template <class Exec, class Pending, class Dst, class Src,
          std::enable_if_t<Kokkos::is_execution_space<Exec>::value && impl::is_pending<Pending>::value, int> = 0>
void assign(const Exec& exec, Pending& pending, const Dst& dst, const Src& src, const Label& label) {
  impl::assign_pending(exec, pending, dst, src, label.name.c_str());
}
template <class Pending, class Dst, class Src, std::enable_if_t<impl::is_pending<Pending>::value, int> = 0>
void assign(Pending& pending, const Dst& dst, const Src& src) {
  impl::assign_pending(typename Dst::execution_space(), pending, dst, src, nullptr);
}
template <class Pending, class Dst, class Src, std::enable_if_t<impl::is_pending<Pending>::value, int> = 0>
void assign(Pending& pending, const Dst& dst, const Src& src, const Label& label) {
  impl::assign_pending(typename Dst::execution_space(), pending, dst, src, label.name.c_str());
}
///@}

}  // namespace spmd
