#pragma once
/// \file gather.hpp
/// Moving a whole distributed array to or from one rank's host memory, as a global row-major
/// array: for tests, small inputs and small outputs (the root holds the whole array).

#include <Kokkos_Core.hpp>

#include <climits>
#include <vector>

#include "spmd/array.hpp"

namespace spmd {

namespace impl {
template <class Packed, int N, std::size_t... D>
Packed make_packed(const Box<N>& b, std::index_sequence<D...>) {
  return Packed(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::gather::packed")),
                static_cast<std::size_t>(b.extent(D))...);
}
/// Owned block of `a` as a contiguous host vector (row-major over the owned box). Local.
template <class T, int N, class M>
std::vector<T> owned_to_host(const Array<T, N, M>& a) {
  using Packed = Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, M>;
  std::vector<T> out(static_cast<std::size_t>(a.owned().size()));
  if (out.empty()) return out;
  Packed packed = make_packed<Packed>(a.owned(), std::make_index_sequence<N>{});
  Kokkos::deep_copy(packed, a.local());
  Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(
      out.data(), packed.layout());
  Kokkos::deep_copy(host, packed);
  return out;
}
template <class T, int N, class M>
void host_to_owned(const Array<T, N, M>& a, const std::vector<T>& in) {
  using Packed = Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, M>;
  if (in.empty()) return;
  Packed packed = make_packed<Packed>(a.owned(), std::make_index_sequence<N>{});
  Kokkos::View<typename add_stars<const T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>
      host(in.data(), packed.layout());
  Kokkos::deep_copy(packed, host);
  Kokkos::deep_copy(a.local(), packed);
}
template <class T>
MPI_Datatype gather_type() {
  if constexpr (std::is_arithmetic_v<T>)
    return mpi_type<T>();
  else
    return MPI_BYTE;
}
inline int checked_count(index_t n, std::size_t elem, const char* fn) {
  const index_t c = n * static_cast<index_t>(elem);
  if (c > INT_MAX) throw Error(str(fn, ": a block of ", n, " elements is too large for one MPI message"), true);
  return static_cast<int>(c);
}
/// Per-rank element counts and displacements (in MPI units) of the owned blocks; computed on
/// every rank from the replicated distribution, so an overflow is seen by all alike.
template <int N>
void block_counts(const Distribution<N>& d, std::size_t unit, const char* fn, std::vector<int>& counts,
                  std::vector<int>& displs) {
  const int p = d.comm().size();
  counts.resize(static_cast<std::size_t>(p));
  displs.resize(counts.size());
  index_t off = 0;
  for (int r = 0; r < p; ++r) {
    const index_t n = d.owned_by(r).size();
    counts[r] = checked_count(n, unit, fn);
    displs[r] = checked_count(off, unit, fn);
    off += n;
  }
}
}  // namespace impl

/// The whole array, row-major, on rank `root` (an empty vector on the others). Collective.
template <class T, int N, class M>
std::vector<T> gather(const Array<T, N, M>& a, int root = 0) {
  const char* fn = "spmd::gather";
  const Comm& comm = a.comm();
  if (root < 0 || root >= comm.size())
    throw Error(impl::str(fn, ": root ", root, " is not a rank of a communicator of ", comm.size()), true);
  const std::size_t unit = std::is_arithmetic_v<T> ? 1 : sizeof(T);
  std::vector<T> mine = impl::owned_to_host(a);
  std::vector<int> counts, displs;
  impl::block_counts(a.distribution(), unit, fn, counts, displs);  // same verdict on every rank
  std::vector<T> packed, out;
  if (comm.rank() == root) packed.resize(static_cast<std::size_t>(a.size()));
  SPMD_MPI_CHECK(MPI_Gatherv(mine.data(), counts[comm.rank()], impl::gather_type<T>(), packed.data(), counts.data(),
                             displs.data(), impl::gather_type<T>(), root, comm.raw()),
                 fn);
  if (comm.rank() == root) {
    out.resize(static_cast<std::size_t>(a.size()));
    const Box<N> whole{Index<N>{}, a.shape()};
    std::size_t k = 0;
    for (int r = 0; r < comm.size(); ++r)
      for_each_index(a.distribution().owned_by(r),
                     [&](const Index<N>& g) { out[static_cast<std::size_t>(whole.offset_of(g))] = packed[k++]; });
  }
  return out;
}

/// The whole array, row-major, on every rank. Collective.
template <class T, int N, class M>
std::vector<T> allgather(const Array<T, N, M>& a) {
  std::vector<T> out = gather(a, 0);
  out.resize(static_cast<std::size_t>(a.size()));
  const std::size_t unit = std::is_arithmetic_v<T> ? 1 : sizeof(T);
  // Broadcast in pieces that fit an int count.
  const std::size_t chunk = static_cast<std::size_t>(INT_MAX) / unit;
  for (std::size_t off = 0; off < out.size(); off += chunk) {
    const int n = static_cast<int>(std::min(chunk, out.size() - off) * unit);
    SPMD_MPI_CHECK(MPI_Bcast(out.data() + off, n, impl::gather_type<T>(), 0, a.comm().raw()), "spmd::allgather");
  }
  return out;
}

/// Set the owned values of `a` from `global` (row-major, a.size() elements), read on rank `root`
/// only (the other ranks may pass an empty vector). Halos are not updated. Collective.
template <class T, int N, class M>
void scatter(const std::vector<T>& global, const Array<T, N, M>& a, int root = 0) {
  const char* fn = "spmd::scatter";
  const Comm& comm = a.comm();
  if (root < 0 || root >= comm.size())
    throw Error(impl::str(fn, ": root ", root, " is not a rank of a communicator of ", comm.size()), true);
  comm.check(comm.rank() != root || static_cast<index_t>(global.size()) == a.size(),
             impl::str(fn, ": the host array on root ", root, " has ", global.size(), " elements, the array '",
                       a.label(), "' of shape ", impl::shape_str(a.shape()), " has ", a.size()));
  const std::size_t unit = std::is_arithmetic_v<T> ? 1 : sizeof(T);
  std::vector<int> counts, displs;
  impl::block_counts(a.distribution(), unit, fn, counts, displs);  // same verdict on every rank
  std::vector<T> packed;
  if (comm.rank() == root) {
    packed.reserve(global.size());
    const Box<N> whole{Index<N>{}, a.shape()};
    for (int r = 0; r < comm.size(); ++r)
      for_each_index(a.distribution().owned_by(r), [&](const Index<N>& g) {
        packed.push_back(global[static_cast<std::size_t>(whole.offset_of(g))]);
      });
  }
  std::vector<T> mine(static_cast<std::size_t>(a.owned().size()));
  SPMD_MPI_CHECK(MPI_Scatterv(packed.data(), counts.data(), displs.data(), impl::gather_type<T>(), mine.data(),
                              counts[comm.rank()], impl::gather_type<T>(), root, comm.raw()),
                 fn);
  impl::host_to_owned(a, mine);
}

}  // namespace spmd
