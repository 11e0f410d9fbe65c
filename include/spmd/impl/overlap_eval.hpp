#pragma once
// The overlapped assignment (spmd::assign(pending, dst, e), overlap.hpp): the expression
// assignment of impl/expr_eval.hpp run in two phases around the end of a halo exchange. This
// rank's box J of the destination is split into the interior I (the points whose every in-place
// operand reads only owned elements of its array: no halo) and the rest (at most 2M slabs); I is
// evaluated while the exchange is in flight, the slabs after it has ended.
//
// It reuses the assignment's own pieces (classification, moves, binding, the kernel launch); only
// the split is here: the binding made for J is shifted to each part (an operand's address of
// point k of a part is its address of k + part.lo - J.lo). When the destination's storage is read
// at other positions (in place), or is the storage the exchange is moving, every part is
// evaluated into the assignment's buffer and copied back once the exchange has ended, so NumPy's
// as-if-into-a-temporary result and the exchange's own reads are kept.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "spmd/impl/expr_eval.hpp"

namespace spmd::impl {

/// The points of `box` (destination view indices) at which no in-place operand of `e` reads
/// outside its array's owned block. From replicated data and this rank's boxes only. Local (the
/// classification's errors are collective).
template <class E, class Td, int Nd, class Mem, int M, class Name>
Box<M> interior_of(const char* fn, const E& e, const Array<Td, Nd, Mem>& tp, const Selection<Nd, M>& ts,
                   const std::common_type_t<Index<M>>& tshape, const Box<M>& box, const Name& target_name) {
  Box<M> inner = box;
  auto narrow = [&](const auto& o) {
    using O = std::decay_t<decltype(o)>;
    if constexpr (O::rank == M) {
      if (!(o.shape() == tshape) || classify(fn, o, tp, ts, target_name) != Access::direct) return;  // buffered
      const auto& op = o.parent();
      const Box<M> reads_owned =
          selection_intersect(halo_selection(op.distribution(), o.selection(), ts), op.owned(), box);
      inner = reads_owned.empty() ? Box<M>{} : inner.intersect(reads_owned);
    }
  };
  visit_terminals(e, narrow);
  return inner;
}

/// dst = e on `exec` in two phases around pending.end(exec) (see the file comment); `pending` is
/// a HaloRequest or a HaloExchange with an exchange in progress (begun on another instance, e.g.
/// spmd::halo_begin_overlapped). Shapes that stretch, a plain copy of one view, and a box with no
/// interior end the exchange first and assign as spmd::assign does. Collective (the exchange's
/// end is neighbour-collective).
template <class Exec, class Pending, class Td, int M, int Nd, class Mem, class E>
void assign_overlapped(const Exec& exec, Pending& pending, const ArrayView<Td, M, Nd, Mem>& dst, const E& e,
                       const char* fn, const char* label) {
  const auto& tp = dst.parent();
  bool split = !tp.is_null();
  if constexpr (E::rank != M || is_view<E>::value) {
    split = false;
  } else {
    if (split) split = e.shape() == dst.shape();
  }
  if (!split) {
    pending.end(exec);
    assign_expr(exec, dst, e, fn, static_cast<ExprState<Td, Mem>*>(nullptr), label);
    return;
  }
  if constexpr (E::rank == M && !is_view<E>::value) {
    constexpr std::size_t K = terminal_count<E>::value;
    ExprState<Td, Mem>& st = expr_state(tp);
    const Region timer(label ? label : "spmd::expr::assign", KernelName{});
    const Box<M> box = dst.owned();
    auto name = [&] { return "destination " + dst.describe(); };
    Alias alias;
    const Binding<M, K> b = resolve(exec, fn, e, tp, dst.selection(), dst.shape(), box, st, name, alias);
    const Box<M> inner = interior_of(fn, e, tp, dst.selection(), dst.shape(), box, name);
    const auto size = element_sizes(e);
    const Source<M> d = source_of(tp, dst.selection(), box);
    // through the buffer when the destination is read elsewhere or is being exchanged
    const bool buffered = alias.aliased || pending.touches(tp.local_with_halo().data());
    const auto n = static_cast<std::size_t>(box.size());
    const Kokkos::Array<index_t, M> cc = compact_coef(box);
    if (buffered && st.scratch.extent(0) < n)
      st.scratch = Kokkos::View<Td*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::scratch"), n);
    auto run = [&](const Box<M>& part, const char* name_of_part) {
      if (part.empty()) return;
      Binding<M, K> c = rebased(b, size, box, part);
      const auto src = bind(e, c);
      if (buffered)
        launch_assign(exec, name_of_part, DstDev<Td, M>{st.scratch.data() + part_offset(cc, box, part), cc}, src, part,
                      contiguous(c, cc));
      else
        launch_assign(
            exec, name_of_part,
            DstDev<Td, M>{static_cast<Td*>(const_cast<void*>(d.data)) + part_offset(d.coef, box, part), d.coef}, src,
            part, contiguous(c, d.coef));
    };
    run(inner, label ? label : "spmd::expr::assign_interior");
    pending.end(exec);
    for (const Box<M>& part : frame_of(box, inner)) run(part, label ? label : "spmd::expr::assign_boundary");
    if (buffered && !box.empty())
      launch_assign(exec, "spmd::expr::copy_back", DstDev<Td, M>{static_cast<Td*>(const_cast<void*>(d.data)), d.coef},
                    TermDev<Td, M>{st.scratch.data(), cc}, box, d.coef[M - 1] == 1);
  }
}

}  // namespace spmd::impl
