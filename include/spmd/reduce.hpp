#pragma once
/// \file reduce.hpp
/// Reductions over distributed arrays. All Collective: every rank of the array's communicator
/// calls them, and every rank gets the same result.
///
/// Each rank reduces its owned block with one Kokkos kernel, then one MPI_Allreduce combines the
/// ranks' partial results. Ranks that own nothing contribute the identity.

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <type_traits>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/backend.hpp"

namespace spmd {

namespace impl {
/// Floating type of norms and means: T for floating T, double otherwise.
template <class T>
using real_t = std::conditional_t<std::is_floating_point_v<T>, T, double>;

/// Adapts a body(acc, i...) to Kokkos' reduction functor signature (i..., acc).
template <class Body, class Acc, class Seq>
struct ReduceAdapter;
template <class Body, class Acc, std::size_t... D>
struct ReduceAdapter<Body, Acc, std::index_sequence<D...>> {
  Body body;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const int_t<D>... i, Acc& acc) const { body(acc, i...); }
};

/// Reduce body over the owned block of `a` with a Kokkos reducer (Kokkos::Sum<Acc>, ...).
template <class Reducer, class Acc, class T, int N, class M, class Body>
Acc local_reduce(const char* label, const Array<T, N, M>& a, const Body& body) {
  Acc result{};
  using Exec = typename M::execution_space;
  Kokkos::parallel_reduce(label, nd_policy<N>(Exec(), owned_extents(a.owned())),
                          ReduceAdapter<Body, Acc, std::make_index_sequence<N>>{body}, Reducer(result));
  return result;
}
/// The same with a Kokkos reducer kind (Kokkos::Sum, ...).
template <template <class, class...> class Reducer, class Acc, class T, int N, class M, class Body>
Acc local_reduce(const char* label, const Array<T, N, M>& a, const Body& body) {
  return local_reduce<Reducer<Acc>, Acc>(label, a, body);
}

enum class Combine { sum, prod, min, max, absmax };

/// acc = acc (C) x, in a kernel.
template <Combine C, class Acc>
KOKKOS_FORCEINLINE_FUNCTION void combine(Acc& acc, const Acc x) {
  if constexpr (C == Combine::sum)
    acc += x;
  else if constexpr (C == Combine::prod)
    acc *= x;
  else if constexpr (C == Combine::min)
    acc = x < acc ? x : acc;
  else if constexpr (C == Combine::max)
    acc = x > acc ? x : acc;
  else {
    const Acc m = x < Acc(0) ? -x : x;
    acc = m > acc ? m : acc;
  }
}

/// The Kokkos reducer that combines per-thread results of a C reduction.
template <Combine C, class Acc>
using reducer_t =
    std::conditional_t<C == Combine::sum, Kokkos::Sum<Acc>,
                       std::conditional_t<C == Combine::prod, Kokkos::Prod<Acc>,
                                          std::conditional_t<C == Combine::min, Kokkos::Min<Acc>, Kokkos::Max<Acc>>>>;

/// The ranks' partial results of a C reduction combined (one MPI_Allreduce). Collective.
template <Combine C, class Acc>
Acc combine_ranks(const Comm& comm, const Acc local) {
  if constexpr (C == Combine::sum)
    return comm.allreduce(local, Op::sum);
  else if constexpr (C == Combine::prod)
    return comm.allreduce(local, Op::prod);
  else if constexpr (C == Combine::min)
    return comm.allreduce(local, Op::min);
  else if constexpr (C == Combine::max)
    return comm.allreduce(local, Op::max);
  else  // |x| >= 0: an empty block contributes 0, not Max's identity (the lowest Acc)
    return comm.allreduce(local < Acc(0) ? Acc(0) : local, Op::max);
}

template <Combine C, class A>
struct ValueBody {
  A a;
  template <class Acc, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Acc& acc, I... i) const {
    combine<C>(acc, static_cast<Acc>(a(i...)));
  }
};

template <class A, class B>
struct DotBody {
  A a;
  B b;
  template <class Acc, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Acc& acc, I... i) const {
    acc += static_cast<Acc>(a(i...)) * static_cast<Acc>(b(i...));
  }
};

template <class A, class P>
struct CountBody {
  A a;
  P pred;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(index_t& acc, I... i) const {
    if (pred(a(i...))) ++acc;
  }
};

/// Lowest row-major global index whose value equals `target`.
template <class A, class T, int N>
struct FindBody {
  A a;
  T target;
  Kokkos::Array<index_t, N> lo;     // global index of the owned block's first point
  Kokkos::Array<index_t, N> shape;  // global shape
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(index_t& acc, I... i) const {
    if (!(a(i...) == target)) return;
    const int idx[N] = {i...};
    index_t lin = 0;
    for (int d = 0; d < N; ++d) lin = lin * shape[d] + (lo[d] + idx[d]);
    acc = lin < acc ? lin : acc;
  }
};

template <class T, int N, class M>
void require_nonempty(const char* fn, const Array<T, N, M>& a) {
  if (a.size() == 0)
    throw Error(impl::str(fn, ": zero-size array '", a.label(), "' (shape ", impl::shape_str(a.shape()), ") has no ",
                          fn + 6, " (the reduction has no identity)"),
                true);
}

template <Combine C, class T, int N, class M>
T reduce_value(const char* label, const Array<T, N, M>& a) {
  using Body = ValueBody<C, decltype(a.owned_access())>;
  return combine_ranks<C>(a.comm(), local_reduce<reducer_t<C, T>, T>(label, a, Body{a.owned_access()}));
}

template <class T, int N, class M>
Index<N> find_first(const char* label, const Array<T, N, M>& a, const T& target) {
  FindBody<decltype(a.owned_access()), T, N> body{a.owned_access(), target, {}, {}};
  for (int d = 0; d < N; ++d) {
    body.lo[d] = a.owned().lo[d];
    body.shape[d] = a.shape()[d];
  }
  const index_t lin = a.comm().allreduce(local_reduce<Kokkos::Min, index_t>(label, a, body), Op::min);
  Index<N> g{};
  index_t r = lin;
  for (int d = N - 1; d >= 0; --d) {
    g[d] = r % a.shape()[d];
    r /= a.shape()[d];
  }
  return g;
}
}  // namespace impl

/// Sum of all elements (0 for an empty array). Collective.
template <class T, int N, class M>
T sum(const Array<T, N, M>& a) {
  return impl::reduce_value<impl::Combine::sum>("spmd::reduce::sum", a);
}
/// Product of all elements (1 for an empty array). Collective.
template <class T, int N, class M>
T prod(const Array<T, N, M>& a) {
  return impl::reduce_value<impl::Combine::prod>("spmd::reduce::prod", a);
}
/// Smallest element; throws for an empty array. NaNs are not ordered (as with std::min).
/// Collective.
template <class T, int N, class M>
T min(const Array<T, N, M>& a) {
  impl::require_nonempty("spmd::min", a);
  return impl::reduce_value<impl::Combine::min>("spmd::reduce::min", a);
}
/// Largest element; throws for an empty array. Collective.
template <class T, int N, class M>
T max(const Array<T, N, M>& a) {
  impl::require_nonempty("spmd::max", a);
  return impl::reduce_value<impl::Combine::max>("spmd::reduce::max", a);
}
/// Arithmetic mean (double for integer T); throws for an empty array. Collective.
template <class T, int N, class M>
impl::real_t<T> mean(const Array<T, N, M>& a) {
  impl::require_nonempty("spmd::mean", a);
  using R = impl::real_t<T>;
  using Body = impl::ValueBody<impl::Combine::sum, decltype(a.owned_access())>;
  const R s =
      a.comm().allreduce(impl::local_reduce<Kokkos::Sum, R>("spmd::reduce::mean", a, Body{a.owned_access()}), Op::sum);
  return s / static_cast<R>(a.size());
}
/// Sum of a(i) * b(i); a and b must be distributed alike. Collective.
template <class T, int N, class M>
T dot(const Array<T, N, M>& a, const Array<T, N, M>& b) {
  impl::check_same_layout("spmd::dot", a, b);
  using Body = impl::DotBody<decltype(a.owned_access()), decltype(b.owned_access())>;
  return a.comm().allreduce(
      impl::local_reduce<Kokkos::Sum, T>("spmd::reduce::dot", a, Body{a.owned_access(), b.owned_access()}), Op::sum);
}
/// Euclidean norm sqrt(sum a(i)^2). Collective.
template <class T, int N, class M>
impl::real_t<T> norm2(const Array<T, N, M>& a) {
  using R = impl::real_t<T>;
  using Body = impl::DotBody<decltype(a.owned_access()), decltype(a.owned_access())>;
  const R s = a.comm().allreduce(
      impl::local_reduce<Kokkos::Sum, R>("spmd::reduce::norm2", a, Body{a.owned_access(), a.owned_access()}), Op::sum);
  return std::sqrt(s);
}
/// Largest absolute value (0 for an empty array). Collective.
template <class T, int N, class M>
T norm_inf(const Array<T, N, M>& a) {
  return impl::reduce_value<impl::Combine::absmax>("spmd::reduce::norm_inf", a);
}
/// Global index of the smallest element; ties go to the lowest row-major index. Throws for an
/// empty array. With NaNs present the result is unspecified (as for min). Collective.
template <class T, int N, class M>
Index<N> argmin(const Array<T, N, M>& a) {
  impl::require_nonempty("spmd::argmin", a);
  return impl::find_first("spmd::reduce::argmin", a, min(a));
}
/// Global index of the largest element; ties go to the lowest row-major index. Collective.
template <class T, int N, class M>
Index<N> argmax(const Array<T, N, M>& a) {
  impl::require_nonempty("spmd::argmax", a);
  return impl::find_first("spmd::reduce::argmax", a, max(a));
}
/// Number of elements for which pred(value) is true; pred is a KOKKOS_LAMBDA. Collective.
template <class T, int N, class M, class P>
index_t count_if(const Array<T, N, M>& a, const P& pred) {
  impl::CountBody<decltype(a.owned_access()), P> body{a.owned_access(), pred};
  return a.comm().allreduce(impl::local_reduce<Kokkos::Sum, index_t>("spmd::reduce::count_if", a, body), Op::sum);
}
/// True when pred holds for some element (false for an empty array). Collective.
template <class T, int N, class M, class P>
bool any_of(const Array<T, N, M>& a, const P& pred) {
  return count_if(a, pred) > 0;
}
/// True when pred holds for every element (true for an empty array). Collective.
template <class T, int N, class M, class P>
bool all_of(const Array<T, N, M>& a, const P& pred) {
  return count_if(a, pred) == a.size();
}

/// Element-wise all-reduce, in place, of a contiguous Kokkos::View in any memory space (for
/// per-rank partial results held on the device). NCCL on its stream when the backend resolves
/// to NCCL; otherwise MPI, directly when it can read the memory, else through a host copy.
/// Collective.
template <class View>
void allreduce(const Comm& comm, const View& v, Op op, Backend backend = Backend::automatic) {
  using M = typename View::memory_space;
  using T = typename View::non_const_value_type;
  static_assert(!std::is_const_v<typename View::value_type>, "spmd::allreduce: the view must be writable");
  if (!v.span_is_contiguous())
    throw Error(impl::str("spmd::allreduce: view '", v.label(), "' is not contiguous"), true);
  const Backend b = impl::resolve_backend<M>(comm, backend, "spmd::allreduce");
  typename M::execution_space exec;
  const auto n = static_cast<std::size_t>(v.span());
  if (b == Backend::nccl) {
    impl::nccl_allreduce(comm, impl::stream_of(exec), v.data(), n, impl::kind_of<T>(), op);
    impl::fence(exec, "spmd::allreduce after ncclAllReduce");
    return;
  }
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error(impl::str("spmd::allreduce: ", n, " elements exceed MPI's int count"), true);
  impl::fence(exec, "spmd::allreduce before MPI_Allreduce");
  if (impl::host_accessible<M>() || impl::mpi_cuda_aware()) {
    comm.allreduce(v.data(), static_cast<int>(n), op);
    return;
  }
  Kokkos::View<T*, Kokkos::HostSpace> host(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::allreduce::host")), n);
  Kokkos::View<T*, M, Kokkos::MemoryUnmanaged> flat(v.data(), n);
  Kokkos::deep_copy(host, flat);
  comm.allreduce(host.data(), static_cast<int>(n), op);
  Kokkos::deep_copy(flat, host);
}

}  // namespace spmd
