#pragma once
// The work behind array.hpp's element access and creation functions, templated on the array type
// (array.hpp checks and dispatches): reading and writing one element by global index, the
// allocation-failure message, and making an array on a new distribution with its failures agreed.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::impl {

/// spmd::Array's allocation failure: what `fn` asked for on this rank and why it failed. Local.
template <class T, class M, int N>
std::string allocation_message(const char* fn, const Distribution<N>& d, const std::string& label,
                               const std::exception& e) {
  double bytes = static_cast<double>(sizeof(T));
  for (const int x : d.local_extents_with_halo()) bytes *= x;
  const std::string why = e.what();
  return str(fn, ": cannot allocate '", label, "' (shape ", shape_str(d.shape()), ", halo ", shape_str(d.halo()),
             "): rank ", d.comm().rank(), " asked for ", bytes_str(bytes), " in ", M::name(), " (",
             why.substr(0, why.find('\n')).substr(0, 200), ")");
}

/// The element of `a`'s storage at storage index l (a rank-0 subview). Local.
template <class A, std::size_t... D>
auto element_subview(const A& a, const std::array<int, A::rank>& l, std::index_sequence<D...>) {
  return Kokkos::subview(a.local_with_halo(), l[D]...);
}
template <class A>
auto element_of(const A& a, const std::array<int, A::rank>& l) {
  return element_subview(a, l, std::make_index_sequence<A::rank>{});
}

/// The storage index of g, which this rank must own (else a local spmd::Error). Local.
template <class A>
std::array<int, A::rank> owned_index(const A& a, const Index<A::rank>& g, const char* fn) {
  if (a.is_null()) throw Error(str(fn, ": null array"));
  if (!a.owned().contains(g))
    throw Error(str(fn, ": global index ", shape_str(g), " is not owned by rank ", a.comm().rank(), " (its block is ",
                    a.owned(), "; get and set reach any element, collectively)"));
  return a.local_index(g);
}

/// The owner of g, once every rank agreed that g is the same in-range index everywhere (else the
/// same spmd::Error on every rank). Collective.
template <class A>
int agreed_owner(const A& a, const Index<A::rank>& g, const char* fn) {
  constexpr int N = A::rank;
  if (a.is_null()) throw Error::replicated(str(fn, ": null array"));
  // Every rank must ask for the same element: one allreduce agrees on the index (its largest and
  // smallest value per axis) and on a range error some ranks may see alone.
  std::string err;
  for (int d = 0; d < N && err.empty(); ++d)
    if (g[d] < 0 || g[d] >= a.extent(d))
      err = str(fn, ": global index ", shape_str(g), " is out of range for shape ", shape_str(a.shape()));
  index_t agree[1 + 2 * N];
  agree[0] = err.empty() ? 0 : 1;
  for (int d = 0; d < N; ++d) {
    agree[1 + d] = g[d];
    agree[1 + N + d] = -g[d];
  }
  a.comm().allreduce(agree, 1 + 2 * N, Op::max);
  if (agree[0] != 0) a.comm().check(err.empty(), err);
  for (int d = 0; d < N; ++d)
    if (agree[1 + d] != -agree[1 + N + d])
      throw Error::replicated(str(fn, ": the ranks ask for different global indices (from ", -agree[1 + N + d], " to ",
                                  agree[1 + d], " along axis ", d, ")"));
  return a.distribution().owner(g);
}

/// Array::get: the owner reads the element and broadcasts it. Collective.
template <class A>
typename A::value_type get_element(const A& a, const Index<A::rank>& g) {
  using T = typename A::value_type;
  const int owner = agreed_owner(a, g, "spmd::Array::get");
  T value{};
  if (a.comm().rank() == owner) Kokkos::deep_copy(value, element_of(a, a.local_index(g)));
  if constexpr (std::is_arithmetic_v<T>) {
    return a.comm().bcast(value, owner);
  } else {
    SPMD_MPI_CHECK(MPI_Bcast(&value, sizeof(T), MPI_BYTE, owner, a.comm().raw()), "spmd::Array::get");
    return value;
  }
}

/// Array::set: the owner writes the element. Collective.
template <class A>
void set_element(const A& a, const Index<A::rank>& g, const typename A::value_type& v) {
  if (a.comm().rank() == agreed_owner(a, g, "spmd::Array::set")) Kokkos::deep_copy(element_of(a, a.local_index(g)), v);
}

template <std::size_t R>
Index<static_cast<int>(R)> to_index(const index_t (&shape)[R]) {
  Index<static_cast<int>(R)> s{};
  for (std::size_t d = 0; d < R; ++d) s[d] = shape[d];
  return s;
}
template <class... Opts>
Label label_or(const char* fallback, const Opts&... opts) {
  auto o = gather_options(opts...);
  return Label{o.label.empty() ? std::string(fallback) : o.label};
}
/// An array on a new distribution of `shape`, allocation failures agreed across the
/// communicator (every rank throws the message of the lowest failing rank). Collective.
template <class T, class M, std::size_t R, class... Opts>
Array<T, static_cast<int>(R), M> make_array(const char* fn, const Comm& comm, const std::array<index_t, R>& shape,
                                            Init init, const Opts&... opts) {
  constexpr int N = static_cast<int>(R);
  const Distribution<N> d(comm, shape, opts...);
  Array<T, N, M> a;
  std::string err;
  try {
    a = Array<T, N, M>(d, label_or(fn, opts...), init);
  } catch (const Error& e) {
    err = e.what();
  }
  comm.check(err.empty(), err);
  return a;
}
/// Agree that every rank passes the same `shape` (one allreduce); else the same spmd::Error on
/// every rank. Collective.
template <std::size_t R>
void agree_shape(const Comm& comm, const char* fn, const std::array<index_t, R>& shape) {
  constexpr int N = static_cast<int>(R);
  index_t v[2 * N];
  for (int d = 0; d < N; ++d) {
    v[d] = shape[d];
    v[N + d] = -shape[d];
  }
  comm.allreduce(v, 2 * N, Op::max);
  for (int d = 0; d < N; ++d)
    if (v[d] != -v[N + d])
      throw Error::replicated(
          str(fn, ": the ranks pass operands of different shapes (axis ", d, ": from ", -v[N + d], " to ", v[d], ")"));
}
/// a(i) = start + i * step over the owned points. (Kept out of arange: CUDA does not allow an
/// extended lambda in a function template with an unnamed template parameter.)
template <class T, class M>
void arange_fill(const Array<T, 1, M>& a, T start, T step) {
  auto out = a.owned_access();
  const index_t lo = a.owned().lo[0];
  Kokkos::parallel_for(
      "spmd::array::arange", nd_policy<1>(typename M::execution_space(), {static_cast<int>(a.owned().extent(0))}),
      KOKKOS_LAMBDA(int i) { out(i) = static_cast<T>(start + static_cast<T>(lo + i) * step); });
}

/// Kernel body of Array::fill(): v at every owned point, through the array's owned accessor.
/// (A namespace-scope type: nvcc's generated kernel stubs name the functor's type, so it cannot be
/// a private member of Array.)
template <class Access, class T>
struct OwnedFill {
  Access out;
  T v;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    out(i...) = v;
  }
};

}  // namespace spmd::impl
