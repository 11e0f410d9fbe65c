#pragma once
/// \file algorithm.hpp
/// Kernels over the owned points of arrays: for_each, transform, fill, copyto, copy. All Local: each
/// rank works on its own block, with no communication. They run on the kernel layer
/// (impl/kernels.hpp), like expressions and the solvers' vector kernels.
///
/// The execution-space-first overloads run on the given instance (an instance of the arrays'
/// execution space, e.g. one made on a CUDA stream); the others on a default instance. Kernels
/// are asynchronous, as Kokkos kernels are; fence an instance before reading its results on the
/// host or using them from another instance.

#include <Kokkos_Core.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/impl/algorithm_impl.hpp"

namespace spmd {

///@{
/// Call f(i0, ..., iN-1) (global indices, index_t) for every point this rank owns of `a`, or of
/// `a` inside `region` (a box of global indices), on `exec`. f is a KOKKOS_LAMBDA. The kernel is
/// named `spmd::algorithm::for_each` for profilers; pass `spmd::label("app::init")` last to name
/// it yourself (docs/profiling.md). Local.
template <class Exec, class T, int N, class M, class F>
void for_each(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  impl::for_each_named(exec, a, region, f, "spmd::algorithm::for_each");
}
template <class Exec, class T, int N, class M, class F>
void for_each(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f, const Label& label) {
  impl::for_each_named(exec, a, region, f, label.name.c_str());
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  impl::for_each_named(typename M::execution_space(), a, region, f, "spmd::algorithm::for_each");
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const Box<N>& region, const F& f, const Label& label) {
  impl::for_each_named(typename M::execution_space(), a, region, f, label.name.c_str());
}
template <class Exec, class T, int N, class M, class F,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void for_each(const Exec& exec, const Array<T, N, M>& a, const F& f) {
  impl::for_each_named(exec, a, a.owned(), f, "spmd::algorithm::for_each");
}
template <class Exec, class T, int N, class M, class F,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void for_each(const Exec& exec, const Array<T, N, M>& a, const F& f, const Label& label) {
  impl::for_each_named(exec, a, a.owned(), f, label.name.c_str());
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const F& f) {
  impl::for_each_named(typename M::execution_space(), a, a.owned(), f, "spmd::algorithm::for_each");
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const F& f, const Label& label) {
  impl::for_each_named(typename M::execution_space(), a, a.owned(), f, label.name.c_str());
}
///@}

///@{
/// out = f(inputs...) element by element over the owned points, on `exec`; f is a KOKKOS_LAMBDA
/// taking one value per input. Inputs may be `out` itself. Arrays must be distributed alike
/// (the same spmd::Error on every rank otherwise). The kernel is named
/// `spmd::algorithm::transform`; an `spmd::label(...)` after the inputs names it yourself:
/// `transform(out, f, a, b, spmd::label("app::axpy"))`. Local.
template <class Exec, class T, int N, class M, class F, class... In,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void transform(const Exec& exec, const Array<T, N, M>& out, const F& f, const In&... inputs) {
  if constexpr (impl::last_is_label<In...>())
    impl::transform_split(exec, out, f, std::forward_as_tuple(inputs...),
                          std::make_index_sequence<sizeof...(In) - 1>{});
  else
    impl::transform_named(exec, out, "spmd::algorithm::transform", f, inputs...);
}
template <class T, int N, class M, class F, class... In>
void transform(const Array<T, N, M>& out, const F& f, const In&... inputs) {
  transform(typename M::execution_space(), out, f, inputs...);
}
///@}

///@{
/// Set every owned element of `a` to v (a.fill(v): the halo is not written), on `exec` (or a
/// default instance). Local.
template <class T, int N, class M>
void fill(const typename M::execution_space& exec, const Array<T, N, M>& a,
          const typename Array<T, N, M>::value_type& v) {
  a.fill(exec, v);
}
template <class T, int N, class M>
void fill(const Array<T, N, M>& a, const typename Array<T, N, M>::value_type& v) {
  a.fill(v);
}
///@}

///@{
/// Copy the owned values of `src` into `dst` (NumPy's `np.copyto(dst, src)`, destination first
/// as Kokkos::deep_copy): the two distributed alike (halos may differ; with equal halo widths
/// the halo is copied too, as one contiguous copy); `src` may live in another memory space (a
/// device array into a host one). On `exec` it is asynchronous, like Kokkos::deep_copy with an
/// instance, and ordered after work on `exec` only: across memory spaces with a host `exec`,
/// fence the device's work on the other array first (Kokkos copies on its own stream). Without an
/// instance it runs on a default instance of dst's execution space, or across memory spaces of the
/// device's side (so after the kernels queued there that wrote `src` or read `dst`), and returns
/// once the copy is complete (dst readable at once). Local (throws the same spmd::Error on every
/// rank for arrays not distributed alike). For any two layouts, write `dst = src` or
/// spmd::assign(dst, src) (Collective).
template <class T, int N, class M, class M2>
void copyto(const typename M::execution_space& exec, const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  impl::copy_owned(exec, dst, src);
}
template <class T, int N, class M, class M2>
void copyto(const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  if constexpr (std::is_same_v<M, M2>) {
    impl::copy_owned(typename M::execution_space(), dst, src);
  } else {
    // On the side the host cannot read (a host instance would copy on Kokkos' own deep-copy
    // stream, unordered with the device's kernels: a device array's values read before the kernel
    // that wrote them had run, seen on an H200 shared by two ranks)
    using E =
        std::conditional_t<impl::host_accessible<M2>(), typename M::execution_space, typename M2::execution_space>;
    const E exec;
    impl::copy_owned(exec, dst, src);
    impl::fence(exec, "spmd::copyto: across memory spaces");
  }
}
///@}

/// A new array with the distribution, label and values (halo included) of `a` (NumPy's
/// np.copy; the same as `Array b = a;`, which waits for the copy). Local.
template <class T, int N, class M>
Array<T, N, M> copy(const Array<T, N, M>& a) {
  return a;
}
/// The same, asynchronous on `exec` (ordered after the work queued on `exec` before it; fence
/// `exec` before reading the result elsewhere). Local.
template <class T, int N, class M>
Array<T, N, M> copy(const typename M::execution_space& exec, const Array<T, N, M>& a) {
  if (a.is_null()) return Array<T, N, M>();
  const impl::Region region("spmd::Array::copy");
  auto b = empty_like(a);
  Kokkos::deep_copy(exec, b.local_with_halo(), a.local_with_halo());
  return b;
}

}  // namespace spmd
