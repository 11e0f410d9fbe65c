#pragma once
/// \file apps/common/matrix_fingerprint.hpp
/// A checksum of a distributed CSR matrix's entries that does not depend on how the matrix is
/// distributed, for the problem record of a checkpoint (cg_solver): the wrapping 64-bit sum over
/// the stored entries of a hash of (global row, global column, the value's bits). Every entry is
/// stored once (in its rank's diagonal or off-diagonal block), and a sum does not depend on the
/// order, so the same matrix gives the same checksum at every rank count; any change of a value
/// (a scaled file), a position or an entry's presence changes it (up to 2^-64 odds).
#include <spmd.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace spmd::apps {

namespace impl {
/// splitmix64's finaliser. Local.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline std::uint64_t entry_hash(std::int64_t row, std::int64_t col, double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return mix64(mix64(mix64(static_cast<std::uint64_t>(row) + 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(col)) ^
               bits);
}
}  // namespace impl

/// The matrix checksum as 16 hexadecimal digits, and the number of entries it covered (which
/// must be A.nnz()). Collective (one ghost import and one MPI_Allreduce).
template <class M>
std::string matrix_checksum(const sparse::CsrMatrix<double, M>& A) {
  // Global column of each ghost: import a vector holding its own global indices.
  auto gid = A.make_vector("spmd::apps::matrix_checksum::gid");
  {
    auto acc = gid.accessor();
    for_each(
        gid, KOKKOS_LAMBDA(index_t i) { acc(i) = static_cast<double>(i); });
  }
  A.import_begin(gid);
  A.import_end();
  const auto ghosts = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.import_plan().ghosts());
  const index_t row0 = A.row_distribution().owned().lo[0], col0 = A.col_distribution().owned().lo[0];

  std::uint64_t sum = 0, count = 0;
  {
    const auto d = A.diagonal_block();
    const auto rp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.graph.row_map);
    const auto ci = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.graph.entries);
    const auto va = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d.values);
    for (int r = 0; r < d.numRows(); ++r)
      for (auto k = rp(r); k < rp(r + 1); ++k, ++count) sum += impl::entry_hash(row0 + r, col0 + ci(k), va(k));
  }
  {
    const auto& o = A.offdiagonal_block();
    const auto rows = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.offdiagonal_rows());
    const auto rp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.graph.row_map);
    const auto ci = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.graph.entries);
    const auto va = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), o.values);
    for (int r = 0; r < o.numRows(); ++r)
      for (auto k = rp(r); k < rp(r + 1); ++k, ++count)
        sum += impl::entry_hash(row0 + rows(r), static_cast<std::int64_t>(ghosts(ci(k))), va(k));
  }
  sum = A.comm().allreduce(sum, Op::sum);
  count = A.comm().allreduce(count, Op::sum);
  A.comm().check(
      count == static_cast<std::uint64_t>(A.nnz()),
      "spmd::apps::matrix_checksum: covered " + std::to_string(count) + " entries of " + std::to_string(A.nnz()));
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  return hex;
}

}  // namespace spmd::apps
