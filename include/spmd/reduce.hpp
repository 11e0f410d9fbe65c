#pragma once
/// \file reduce.hpp
/// Reductions of distributed data: sum, prod, min, max, mean, dot, vdot, norm2, norm_inf, argmin,
/// argmax, count_nonzero, count_if, any_of, all_of. Complex elements: sum, prod, mean, dot, vdot
/// complex, norm2 real, the truth reductions true when nonzero; min, max, norm_inf, argmin, argmax
/// do not compile (no order). All Collective: every rank of the
/// operand's communicator calls them and every rank gets the same result.
///
/// One path for every operand: an Array, a slice (ArrayView) or an expression (expr.hpp) is
/// reduced as the expression it is (`sum(a)` is `sum(a(spmd::all))`), without materialising
/// anything: each rank folds its owned points in one kernel of the kernel layer
/// (impl/kernels.hpp: row chunks with partial results in locals on host spaces, one point per
/// thread on devices), then one MPI_Allreduce combines the ranks' partial results. Ranks that own
/// nothing contribute the identity. Operands on other distributions than the first one are moved
/// as in an assignment (expr.hpp). The execution-space-first overloads run the kernel on the
/// given instance; the others on a default instance of the operand's execution space.
///
/// One meaning per name: any_of(x) / all_of(x) / count_nonzero(x) look at the elements' truth
/// (nonzero), any_of(x, pred) / all_of(x, pred) / count_if(x, pred) at pred(element), for arrays,
/// views and expressions alike (pred: a KOKKOS_LAMBDA of one value).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <type_traits>

#include "spmd/expr.hpp"
#include "spmd/impl/backend.hpp"

namespace spmd {

namespace impl {
/// Arrays, views and expressions.
template <class X>
using if_reducible = std::enable_if_t<is_operand_v<X>, int>;
template <class E>
using if_exec = std::enable_if_t<Kokkos::is_execution_space<E>::value, int>;
/// The default execution space of an operand's data.
template <class X>
using exec_of = typename node_t<X>::memory_space::execution_space;
/// The element type reductions of X fold (bool counts as index_t).
template <class X>
using elem_of = typename node_t<X>::value_type;

/// The reductions that need an order (min, max, norm_inf, argmin, argmax) refuse complex elements
/// at compile time, naming themselves.
#define SPMD_CHECK_ORDERED(fn, X)                                                                      \
  static_assert(!impl::is_complex_v<impl::elem_of<X>>, fn                                              \
                ": complex numbers have no order; reduce abs(z) or real(z) instead (norm_inf(abs(z)) " \
                "is the largest modulus)")
/// Every exec-first reduction checks its instance at compile time, naming itself.
#define SPMD_CHECK_REDUCE_EXEC(fn)                         \
  static_assert(std::is_same_v<Exec, impl::exec_of<X>>, fn \
                ": the execution "                         \
                "space instance must be of the operand's execution space")
/// Global index of view index `lin` (row-major over `shape`). Local.
template <std::size_t R>
std::array<index_t, R> unravel(index_t lin, const std::array<index_t, R>& shape) {
  constexpr int N = static_cast<int>(R);
  std::array<index_t, R> g{};
  for (int d = N - 1; d >= 0; --d) {
    g[d] = shape[d] > 0 ? lin % shape[d] : 0;
    lin = shape[d] > 0 ? lin / shape[d] : 0;
  }
  return g;
}
}  // namespace impl

/// Sum of all elements (0 for an empty operand; bool counts). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto sum(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::sum");
  using V = impl::elem_of<X>;
  using Acc = std::conditional_t<std::is_same_v<V, bool>, index_t, V>;
  return impl::reduce_expr<impl::Combine::sum, impl::Map::value, Acc>(exec, "spmd::sum", "spmd::reduce::sum",
                                                                      impl::as_node(x));
}
/// Product of all elements (1 for an empty operand). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto prod(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::prod");
  return impl::reduce_expr<impl::Combine::prod, impl::Map::value, impl::elem_of<X>>(
      exec, "spmd::prod", "spmd::reduce::prod", impl::as_node(x));
}
/// Smallest element (np.min): NaN when any element is NaN (which NaN, if they differ in sign or
/// payload, is not specified), the sign of a zero result likewise; throws the same spmd::Error
/// on every rank for a zero-size operand. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto min(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::min");
  SPMD_CHECK_ORDERED("spmd::min", X);
  return impl::reduce_expr<impl::Combine::min, impl::Map::value, impl::elem_of<X>>(
      exec, "spmd::min", "spmd::reduce::min", impl::as_node(x), true);
}
/// Largest element (np.max): NaN when any element is NaN, as min; throws for a zero-size
/// operand. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto max(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::max");
  SPMD_CHECK_ORDERED("spmd::max", X);
  return impl::reduce_expr<impl::Combine::max, impl::Map::value, impl::elem_of<X>>(
      exec, "spmd::max", "spmd::reduce::max", impl::as_node(x), true);
}
/// Arithmetic mean (double for integer elements, complex for complex ones); throws for a
/// zero-size operand. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto mean(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::mean");
  const auto e = impl::as_node(x);
  using R = impl::floating_t<impl::elem_of<X>>;
  return impl::reduce_expr<impl::Combine::sum, impl::Map::value, R>(exec, "spmd::mean", "spmd::reduce::mean", e, true) /
         static_cast<impl::real_part_t<R>>(impl::expr_size(e));
}
/// Euclidean norm sqrt(sum |x|^2) (real for complex elements, as np.linalg.norm). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto norm2(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::norm2");
  using R = impl::real_t<impl::elem_of<X>>;
  return std::sqrt(impl::reduce_expr<impl::Combine::sum, impl::Map::square, R>(
      exec, "spmd::norm2", "spmd::reduce::norm2", impl::as_node(x)));
}
/// Largest absolute value (0 for an empty operand; NaN when any element is NaN, as
/// np.linalg.norm(x, np.inf)). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto norm_inf(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::norm_inf");
  SPMD_CHECK_ORDERED("spmd::norm_inf", X);
  return impl::reduce_expr<impl::Combine::absmax, impl::Map::value, impl::elem_of<X>>(
      exec, "spmd::norm_inf", "spmd::reduce::norm_inf", impl::as_node(x));
}
/// Sum of a * b over all elements (a, b: arrays, views or expressions of one shape; complex
/// operands are not conjugated, as np.dot: see vdot). Collective.
template <class Exec, class A, class B, impl::if_exec<Exec> = 0, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto dot(const Exec& exec, const A& a, const B& b) {
  using V = impl::elem_of<decltype(a * b)>;
  using Acc = std::conditional_t<std::is_same_v<V, bool>, index_t, V>;
  return impl::with_product(
      "spmd::dot", a, b,
      [&](const std::string& error) {
        impl::fail_reduction<impl::Combine::sum, Acc>(impl::reduction_comm("spmd::dot", impl::as_node(a)), error);
      },
      [&](const auto& e) { return sum(exec, e); });
}
/// Sum of conj(a) * b over all elements (np.vdot: the first operand conjugated; dot for real
/// operands). Collective.
template <class Exec, class A, class B, impl::if_exec<Exec> = 0, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto vdot(const Exec& exec, const A& a, const B& b) {
  if constexpr (impl::is_complex_v<impl::elem_of<A>>)
    return dot(exec, conj(a), b);
  else
    return dot(exec, a, b);
}
/// Number of nonzero (true) elements. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
index_t count_nonzero(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::count_nonzero");
  return impl::reduce_expr<impl::Combine::sum, impl::Map::nonzero, index_t>(
      exec, "spmd::count_nonzero", "spmd::reduce::count_nonzero", impl::as_node(x));
}
/// Number of elements v with pred(v) true; pred is a KOKKOS_LAMBDA of one value. Collective.
template <class Exec, class X, class P, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
index_t count_if(const Exec& exec, const X& x, const P& pred) {
  SPMD_CHECK_REDUCE_EXEC("spmd::count_if");
  using Node = impl::node_t<X>;
  return impl::reduce_expr<impl::Combine::sum, impl::Map::nonzero, index_t>(
      exec, "spmd::count_if", "spmd::reduce::count_if", impl::MapExpr<P, Node>{pred, impl::as_node(x)});
}
/// True when some element is nonzero (false for a zero-size operand). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
bool any_of(const Exec& exec, const X& x) {
  return count_nonzero(exec, x) > 0;
}
/// True when every element is nonzero (true for a zero-size operand). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
bool all_of(const Exec& exec, const X& x) {
  return count_nonzero(exec, x) == impl::expr_size(impl::as_node(x));
}
/// True when pred holds for some element. Collective.
template <class Exec, class X, class P, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
bool any_of(const Exec& exec, const X& x, const P& pred) {
  return count_if(exec, x, pred) > 0;
}
/// True when pred holds for every element (true for a zero-size operand). Collective.
template <class Exec, class X, class P, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
bool all_of(const Exec& exec, const X& x, const P& pred) {
  return count_if(exec, x, pred) == impl::expr_size(impl::as_node(x));
}
/// Index of the smallest element (a global index for an Array, a view index for a view or an
/// expression); ties go to the lowest row-major index, and with NaNs present it is the index of
/// the first NaN (np.argmin). Throws for a zero-size operand. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmin(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmin");
  SPMD_CHECK_ORDERED("spmd::argmin", X);
  const auto e = impl::as_node(x);
  return impl::unravel(impl::arg_expr<true>(exec, "spmd::argmin", "spmd::reduce::argmin", e), e.shape());
}
/// Index of the largest element; ties go to the lowest row-major index, the first NaN when
/// there is one (np.argmax). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmax(const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmax");
  SPMD_CHECK_ORDERED("spmd::argmax", X);
  const auto e = impl::as_node(x);
  return impl::unravel(impl::arg_expr<false>(exec, "spmd::argmax", "spmd::reduce::argmax", e), e.shape());
}

// ---- the same on a default instance of the operand's execution space ---------------------------

/// sum() on a default instance of the operand's execution space (so are the ones below). Collective.
template <class X, impl::if_reducible<X> = 0>
auto sum(const X& x) {
  return sum(impl::exec_of<X>(), x);
}
/// prod() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto prod(const X& x) {
  return prod(impl::exec_of<X>(), x);
}
/// min() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto min(const X& x) {
  return min(impl::exec_of<X>(), x);
}
/// max() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto max(const X& x) {
  return max(impl::exec_of<X>(), x);
}
/// mean() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto mean(const X& x) {
  return mean(impl::exec_of<X>(), x);
}
/// norm2() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto norm2(const X& x) {
  return norm2(impl::exec_of<X>(), x);
}
/// norm_inf() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto norm_inf(const X& x) {
  return norm_inf(impl::exec_of<X>(), x);
}
/// dot() on a default instance. Collective.
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto dot(const A& a, const B& b) {
  return dot(impl::exec_of<A>(), a, b);
}
/// vdot() on a default instance. Collective.
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto vdot(const A& a, const B& b) {
  return vdot(impl::exec_of<A>(), a, b);
}
/// count_nonzero() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
index_t count_nonzero(const X& x) {
  return count_nonzero(impl::exec_of<X>(), x);
}
/// count_if() on a default instance. Collective.
template <class X, class P, impl::if_reducible<X> = 0, std::enable_if_t<!impl::is_operand_v<P>, int> = 0>
index_t count_if(const X& x, const P& pred) {
  return count_if(impl::exec_of<X>(), x, pred);
}
/// any_of() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
bool any_of(const X& x) {
  return any_of(impl::exec_of<X>(), x);
}
/// all_of() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
bool all_of(const X& x) {
  return all_of(impl::exec_of<X>(), x);
}
/// any_of() with a predicate on a default instance. Collective.
template <class X, class P, impl::if_reducible<X> = 0, std::enable_if_t<!impl::is_operand_v<P>, int> = 0>
bool any_of(const X& x, const P& pred) {
  return any_of(impl::exec_of<X>(), x, pred);
}
/// all_of() with a predicate on a default instance. Collective.
template <class X, class P, impl::if_reducible<X> = 0, std::enable_if_t<!impl::is_operand_v<P>, int> = 0>
bool all_of(const X& x, const P& pred) {
  return all_of(impl::exec_of<X>(), x, pred);
}
/// argmin() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto argmin(const X& x) {
  return argmin(impl::exec_of<X>(), x);
}
/// argmax() on a default instance. Collective.
template <class X, impl::if_reducible<X> = 0>
auto argmax(const X& x) {
  return argmax(impl::exec_of<X>(), x);
}

/// Element-wise all-reduce, in place, of a contiguous Kokkos::View in any memory space (for
/// per-rank partial results held on the device), on `exec`. NCCL on its stream when the backend
/// resolves to NCCL; otherwise MPI, directly when it can read the memory, else through a host
/// copy. Collective.
template <class Exec, class View, impl::if_exec<Exec> = 0>
void allreduce(const Exec& exec, const Comm& comm, const View& v, Op op, Backend backend = Backend::automatic) {
  using M = typename View::memory_space;
  using T = typename View::non_const_value_type;
  static_assert(!std::is_const_v<typename View::value_type>, "spmd::allreduce: the view must be writable");
  static_assert(Kokkos::SpaceAccessibility<Exec, M>::accessible,
                "spmd::allreduce: the view must be accessible from the execution space");
  if (!v.span_is_contiguous())
    throw Error::replicated(impl::str("spmd::allreduce: view '", v.label(), "' is not contiguous"));
  const Backend b = impl::resolve_backend<M>(comm, backend, "spmd::allreduce");
  const auto n = static_cast<std::size_t>(v.span());
  if (b == Backend::nccl) {
    if constexpr (impl::is_complex_v<T>) {  // a complex sum is two real sums; NCCL has no complex product
      if (op != Op::sum)
        throw Error::replicated(
            impl::str("spmd::allreduce: NCCL combines complex values by Op::sum only (view '", v.label(), "')"));
      impl::nccl_allreduce(comm, impl::stream_of(exec), v.data(), 2 * n, impl::kind_of<impl::real_part_t<T>>(), op);
    } else {
      impl::nccl_allreduce(comm, impl::stream_of(exec), v.data(), n, impl::kind_of<T>(), op);
    }
    return;
  }
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error::replicated(impl::str("spmd::allreduce: ", n, " elements exceed MPI's int count"));
  impl::fence(exec, "spmd::allreduce before MPI_Allreduce");
  if (impl::host_accessible<M>() || impl::mpi_cuda_aware()) {
    comm.allreduce(v.data(), static_cast<int>(n), op);
    return;
  }
  Kokkos::View<T*, Kokkos::HostSpace> host(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::allreduce::host")), n);
  Kokkos::View<T*, M, Kokkos::MemoryUnmanaged> flat(v.data(), n);
  Kokkos::deep_copy(exec, host, flat);
  impl::fence(exec, "spmd::allreduce before MPI_Allreduce (staged)");
  comm.allreduce(host.data(), static_cast<int>(n), op);
  Kokkos::deep_copy(flat, host);  // blocking: `host` is freed on return
}
/// allreduce() of a View on a default instance. Collective.
template <class View>
void allreduce(const Comm& comm, const View& v, Op op, Backend backend = Backend::automatic) {
  allreduce(typename View::execution_space(), comm, v, op, backend);
}

}  // namespace spmd
