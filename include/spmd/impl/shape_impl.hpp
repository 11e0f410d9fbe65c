#pragma once
// Shape functions, implementation (shape.hpp checks and dispatches): the operand's parent array
// and selection, reshape onto a distribution (impl/reshape_plan.hpp), transpose as one
// redistribution with permuted axes (impl/region_plan.hpp), the joins behind concatenate and
// stack, and squeeze's view.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/array_impl.hpp"
#include "spmd/impl/axis_reduce_impl.hpp"
#include "spmd/impl/expr_nodes.hpp"
#include "spmd/impl/region_plan.hpp"
#include "spmd/impl/reshape_plan.hpp"
#include "spmd/impl/selection.hpp"

namespace spmd::impl {

template <class X>
constexpr int rank_of() {
  return std::decay_t<X>::rank;
}
/// Enables the shape functions for Arrays and views.
template <class X>
using if_shape_operand = std::enable_if_t<is_array<std::decay_t<X>>::value || is_view<std::decay_t<X>>::value, int>;
template <class E>
using if_exec_space = std::enable_if_t<Kokkos::is_execution_space<E>::value, int>;

/// The array whose storage x shares (x itself for an Array) and the selection of its indices.
template <class T, int N, class Mem>
const Array<T, N, Mem>& parent_of(const Array<T, N, Mem>& a) {
  return a;
}
template <class T, int M, int N, class Mem>
const Array<T, N, Mem>& parent_of(const ArrayView<T, M, N, Mem>& v) {
  return v.parent();
}
template <class T, int N, class Mem>
Selection<N, N> selection_of(const Array<T, N, Mem>&) {
  return Selection<N, N>::identity();
}
template <class T, int M, int N, class Mem>
Selection<N, M> selection_of(const ArrayView<T, M, N, Mem>& v) {
  return v.selection();
}
/// The rank of the array whose storage x shares.
template <class X>
constexpr int parent_rank() {
  return std::decay_t<decltype(parent_of(std::declval<const std::decay_t<X>&>()))>::rank;
}
/// `axis` of an R-axis result, counted from the end when negative; throws an spmd::Error naming
/// `what` (the shape) when out of range.
inline int result_axis(const char* fn, int axis, int r, const std::string& what) {
  if (axis < -r || axis >= r)
    throw Error::replicated(str(fn, ": axis ", axis, " is out of bounds for ", r, " axes (", what, ")"));
  return axis < 0 ? axis + r : axis;
}

/// The shape `want` (one entry may be -1: inferred) checked against an operand of shape `from`
/// in C order. Throws an spmd::Error naming both shapes. Local.
template <int N, int M>
Index<M> reshape_shape(const char* fn, const Index<N>& from, const Index<M>& want) {
  index_t size = 1, known = 1;
  for (int a = 0; a < N; ++a) size *= from[a];
  int unknown = -1;
  for (int b = 0; b < M; ++b) {
    if (want[b] == -1) {
      if (unknown >= 0)
        throw Error(impl::str(fn, ": shape ", impl::shape_str(want), " infers more than one axis (-1); at most one"));
      unknown = b;
    } else if (want[b] < 0) {
      throw Error(
          impl::str(fn, ": shape ", impl::shape_str(want), " has a negative extent (only -1, inferred, is allowed)"));
    } else {
      known *= want[b];
    }
  }
  Index<M> out = want;
  if (unknown >= 0) {
    if (known == 0 || size % known != 0)
      throw Error(impl::str(fn, ": cannot reshape an array of shape ", impl::shape_str(from), " (", size,
                            " elements) into shape ", impl::shape_str(want), " (no extent for the -1 axis fits)"));
    out[unknown] = size / known;
  } else if (known != size) {
    throw Error(impl::str(fn, ": cannot reshape an array of shape ", impl::shape_str(from), " (", size,
                          " elements) into shape ", impl::shape_str(want), " (", known, " elements)"));
  }
  return out;
}
/// x (an Array or a view) in C order onto `to` (checked by the caller), labelled `label`; a
/// view is first copied onto an automatic distribution of its shape. Collective.
template <class Exec, class X, int M>
auto reshape_onto(const Exec& exec, const X& x, const Distribution<M>& to, const std::string& label) {
  using T = typename X::value_type;
  using Mem = typename X::memory_space;
  constexpr int N = rank_of<X>();
  const Region region("spmd::shape::reshape");
  bool halo = false;
  for (int b = 0; b < M; ++b) halo = halo || to.halo()[b] > 0;
  Array<T, M, Mem> out(to, Label{label}, halo ? Init::zero : Init::none);
  if constexpr (is_array<X>::value) {
    ReshapePlan<T, N, M, Mem>(x.distribution(), to, "spmd::reshape").apply(exec, out, x);
  } else {
    Array<T, N, Mem> src(Distribution<N>(x.comm(), x.shape()), Label{"spmd::reshape::source"}, Init::none);
    assign(exec, src, x);
    ReshapePlan<T, N, M, Mem>(src.distribution(), to, "spmd::reshape").apply(exec, out, src);
  }
  return out;
}

/// out[j] = x[j permuted]: out axis k is x's axis order[k]. One redistribution from x's parent
/// (a view's selection composed with the permutation: no temporary). Collective.
template <class Exec, class X, class... Opts>
auto permute_axes(const Exec& exec, const X& x, const std::array<int, rank_of<X>()>& order, const Opts&... opts) {
  constexpr int N = rank_of<X>();
  constexpr int NP = parent_rank<X>();
  using T = typename X::value_type;
  using Mem = typename X::memory_space;
  const char* fn = "spmd::transpose";
  const Region region("spmd::shape::transpose");
  std::array<int, N> perm{};
  agree(x.comm(), [&] {
    axis_mask<N>(fn, order, x.shape());  // out of range or named twice: throws
    for (int k = 0; k < N; ++k) perm[k] = order[k] < 0 ? order[k] + N : order[k];
  });
  Index<N> shape{};
  std::array<int, N> inv{};
  for (int k = 0; k < N; ++k) {
    shape[k] = x.shape()[perm[k]];
    inv[perm[k]] = k;
  }
  const auto& parent = parent_of(x);
  Selection<NP, N> sel = selection_of(x);
  for (int a = 0; a < NP; ++a)
    if (sel.map[a] >= 0) sel.map[a] = inv[sel.map[a]];
  DistributionOptions o = gather_options(opts...);
  if constexpr (is_array<X>::value) {
    if (o.halo.empty())
      for (int k = 0; k < N; ++k) o.halo.push_back(x.halo()[perm[k]]);
  }
  if (o.label.empty()) o.label = "spmd::transpose";
  const Distribution<N> to(x.comm(), shape, o);
  Array<T, N, Mem> out(to, Label{o.label}, Init::zero);
  RegionPlan<T, NP, N, Mem>(parent.distribution(), sel, to, Backend::automatic, fn).apply(exec, out, parent);
  return out;
}

/// The result of joining operands of `shapes` along `axis` (S = 0: concatenate, an existing
/// axis; S = 1: stack, a new axis) on an automatic distribution over `comm`; each(i, v) writes
/// operand i into v, the result's view of its place. Collective.
template <int S, class T, class Mem, int N, class Exec, class Each, class... Opts>
Array<T, N + S, Mem> join(const Exec& exec, const char* fn, const Comm& comm, const std::vector<Index<N>>& shapes,
                          int axis_in, const Each& each, const Opts&... opts) {
  constexpr int R = N + S;
  (void)exec;
  int axis = 0;
  agree(comm, [&] {
    axis = result_axis(
        fn, axis_in, R,
        impl::str(S ? "the result of stacking operands of shape " : "operand shape ", impl::shape_str(shapes[0])));
    for (std::size_t i = 1; i < shapes.size(); ++i)
      for (int a = 0; a < N; ++a)
        if (shapes[i][a] != shapes[0][a] && (S == 1 || a != axis))
          throw Error(S ? impl::str(fn, ": operand ", i, " has shape ", impl::shape_str(shapes[i]),
                                    " but operand 0 has shape ", impl::shape_str(shapes[0]), " (stacking along axis ",
                                    axis_in, " needs equal shapes)")
                        : impl::str(fn, ": operand ", i, " has shape ", impl::shape_str(shapes[i]),
                                    " but operand 0 has shape ", impl::shape_str(shapes[0]),
                                    ": they must agree on every axis but the concatenation axis ", axis_in));
  });
  Index<R> shape{};
  for (int a = 0, b = 0; a < R; ++a) {
    if (a == axis && S == 1) {
      shape[a] = static_cast<index_t>(shapes.size());
      continue;
    }
    shape[a] = shapes[0][b];
    if (a == axis)
      for (std::size_t i = 1; i < shapes.size(); ++i) shape[a] += shapes[i][b];
    ++b;
  }
  auto out = make_array<T, Mem>(fn, comm, shape, Init::zero, opts...);
  index_t off = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Selection<R, N> sel{};
    for (int a = 0, b = 0; a < R; ++a) {
      sel.step[a] = 1;
      if (a == axis && S == 1) {
        sel.start[a] = static_cast<index_t>(i);
        sel.map[a] = -1;
        continue;
      }
      sel.start[a] = a == axis ? off : 0;
      sel.map[a] = b++;
    }
    if (S == 0) off += shapes[i][axis];
    each(i, ArrayView<T, N, R, Mem>(out, sel, shapes[i]));
  }
  return out;
}
/// join() of operands of one type.
template <int S, class Exec, class X, class... Opts>
auto join_list(const Exec& exec, const char* fn, const X* xs, std::size_t n, int axis, const Opts&... opts) {
  constexpr int N = rank_of<X>();
  if (n == 0) throw Error::replicated(impl::str(fn, ": no operands"));
  std::vector<Index<N>> shapes;
  for (std::size_t i = 0; i < n; ++i) shapes.push_back(xs[i].shape());
  return join<S, typename X::value_type, typename X::memory_space, N>(
      exec, fn, xs[0].comm(), shapes, axis, [&](std::size_t i, const auto& dst) { assign(exec, dst, xs[i]); }, opts...);
}
/// join() of a tuple of operands (Arrays and views mixed).
template <int S, class Exec, class... Xs, class... Opts>
auto join_tuple(const Exec& exec, const char* fn, const std::tuple<Xs...>& xs, int axis, const Opts&... opts) {
  static_assert(sizeof...(Xs) >= 1, "spmd: joining needs at least one operand");
  using X0 = std::decay_t<std::tuple_element_t<0, std::tuple<Xs...>>>;
  constexpr int N = rank_of<X0>();
  using T = typename X0::value_type;
  using Mem = typename X0::memory_space;
  static_assert(((rank_of<Xs>() == N) && ...), "spmd: the operands must have the same number of axes");
  static_assert((std::is_same_v<typename std::decay_t<Xs>::value_type, T> && ...),
                "spmd: the operands must have the same element type");
  static_assert((std::is_same_v<typename std::decay_t<Xs>::memory_space, Mem> && ...),
                "spmd: the operands must live in the same memory space");
  const auto shapes = std::apply([](const auto&... x) { return std::vector<Index<N>>{x.shape()...}; }, xs);
  auto each = [&](std::size_t i, const auto& dst) {
    std::apply(
        [&](const auto&... x) {
          std::size_t k = 0;
          ((k++ == i ? assign(exec, dst, x) : void()), ...);
        },
        xs);
  };
  return join<S, T, Mem, N>(exec, fn, std::get<0>(xs).comm(), shapes, axis, each, opts...);
}
template <class... Xs>
using first_exec_t = typename std::decay_t<std::tuple_element_t<0, std::tuple<Xs...>>>::execution_space;

/// The view of x without the axes where `mask` is true (each of extent 1). Local.
template <int M, class X>
auto squeeze_view(const X& x, const std::array<bool, rank_of<X>()>& mask) {
  constexpr int N = rank_of<X>();
  constexpr int NP = parent_rank<X>();
  using T = typename X::value_type;
  using Mem = typename X::memory_space;
  std::array<int, N> kept{};
  Index<M> shape{};
  for (int k = 0, m = 0; k < N; ++k) {
    kept[k] = mask[k] ? -1 : m;
    if (!mask[k]) shape[m++] = x.shape()[k];
  }
  const Selection<NP, N> vsel = selection_of(x);
  Selection<NP, M> sel{};
  for (int a = 0; a < NP; ++a) {
    sel.start[a] = vsel.start[a];  // a squeezed axis reads its only index, 0: start
    sel.step[a] = vsel.step[a];
    sel.map[a] = vsel.map[a] < 0 ? -1 : kept[vsel.map[a]];
  }
  return ArrayView<T, M, NP, Mem>(parent_of(x), sel, shape);
}

}  // namespace spmd::impl
