// Parallel CRC-32 of a distributed array's global row-major byte stream.
//
// The checksum of a dataset is zlib's crc32 of its bytes in global row-major order, little-endian
// (what Python's zlib.crc32(array.tobytes()) gives). CRC-32 is affine over GF(2) for a fixed
// length L: crc(x) = M x ^ crc(0^L). Split x into per-rank streams x_r, each the full length with
// the rank's owned bytes in place and zeros elsewhere; then x = x_0 ^ ... ^ x_{P-1} and
//   crc(x) = crc(x_0) ^ ... ^ crc(x_{P-1}) ^ [P even] crc(0^L).
// Each rank computes crc(x_r) by running crc32 over its owned runs and extending over the gaps
// with crc32_combine (O(log gap), no pass over zeros), and one MPI_Allreduce(BXOR) combines them.
#include <zlib.h>

#include <array>
#include <cstring>

#include "io_internal.hpp"

namespace spmd::io::impl {

std::uint32_t crc32_of_zeros(std::uint64_t n) {
  // pow2[k] = crc of 2^k zero bytes.
  static const std::array<uLong, 64> pow2 = [] {
    std::array<uLong, 64> t{};
    const unsigned char zero = 0;
    t[0] = crc32(0L, &zero, 1);
    for (int k = 1; k < 64; ++k) t[k] = crc32_combine64(t[k - 1], t[k - 1], static_cast<z_off64_t>(1ULL << (k - 1)));
    return t;
  }();
  uLong crc = 0;  // crc of the empty string
  for (int k = 0; k < 64; ++k)
    if (n & (1ULL << k)) crc = crc32_combine64(crc, pow2[k], static_cast<z_off64_t>(1ULL << k));
  return static_cast<std::uint32_t>(crc);
}

namespace {
bool little_endian() {
  const std::uint16_t one = 1;
  unsigned char c;
  std::memcpy(&c, &one, 1);
  return c == 1;
}
}  // namespace

std::uint32_t checksum_block(const HostBlock& b) {
  const char* fn = "spmd::io::checksum";
  if (!little_endian()) throw Error(str(fn, ": checksums are defined on little-endian bytes; this host is big-endian"));
  const int n = static_cast<int>(b.shape.size());
  const std::uint64_t es = b.elem_size;
  std::uint64_t total = es;
  for (index_t e : b.shape) total *= static_cast<std::uint64_t>(e);
  bool empty = false;
  for (index_t c : b.count) empty = empty || c == 0;

  uLong crc = 0;
  std::uint64_t pos = 0;  // bytes of the global stream covered so far
  std::uint64_t last_gap = ~0ULL;
  uLong last_gap_crc = 0;
  auto extend_zeros = [&](std::uint64_t gap) {
    if (gap == 0) return;
    if (gap != last_gap) {
      last_gap = gap;
      last_gap_crc = crc32_of_zeros(gap);
    }
    crc = crc32_combine64(crc, last_gap_crc, static_cast<z_off64_t>(gap));
  };
  if (!empty) {
    // Trailing axes where the owned block spans the whole axis and the storage has no halo are
    // contiguous both in memory and in the global stream: fold them into one run.
    int k = n - 1;
    while (k > 0 && b.count[k] == b.shape[k] && b.storage[k] == b.count[k]) --k;
    std::uint64_t run = es;
    for (int d = k; d < n; ++d) run *= static_cast<std::uint64_t>(b.count[d]);
    // Strides (elements) of the global array and of the storage.
    std::vector<std::uint64_t> gstride(n, 1), sstride(n, 1);
    for (int d = n - 2; d >= 0; --d) {
      gstride[d] = gstride[d + 1] * static_cast<std::uint64_t>(b.shape[d + 1]);
      sstride[d] = sstride[d + 1] * static_cast<std::uint64_t>(b.storage[d + 1]);
    }
    std::vector<index_t> i(static_cast<std::size_t>(k), 0);  // position over axes < k
    const auto* base = static_cast<const unsigned char*>(b.data);
    while (true) {
      std::uint64_t g = 0, s = 0;
      for (int d = 0; d < n; ++d) {
        const index_t id = d < k ? i[d] : 0;
        g += static_cast<std::uint64_t>(b.lo[d] + id) * gstride[d];
        s += static_cast<std::uint64_t>(b.offset[d] + id) * sstride[d];
      }
      extend_zeros(g * es - pos);
      crc = crc32_z(crc, base + s * es, static_cast<z_size_t>(run));
      pos = g * es + run;
      int d = k - 1;
      while (d >= 0 && ++i[d] == b.count[d]) i[d--] = 0;
      if (d < 0) break;
    }
  }
  extend_zeros(total - pos);
  std::uint32_t mine = static_cast<std::uint32_t>(crc), all = 0;
  SPMD_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_UINT32_T, MPI_BXOR, b.comm.raw()), fn);
  if (b.comm.size() % 2 == 0) all ^= crc32_of_zeros(total);
  return all;
}

}  // namespace spmd::io::impl
