#pragma once
// The diagonal block of a spmd::sparse::CsrMatrix in sliced ELLPACK form (SELL-C-1), with its
// product kernels (a chunk per work item on host spaces, a row per thread on devices) and the
// way back to CSR.

#include <Kokkos_Core.hpp>

#include <cstddef>

#include "spmd/sparse/impl/ghost_import.hpp"

namespace spmd::sparse::impl {

/// Smallest position k in sorted v[0, n) with v[k] >= x (n when none). Local.
inline std::size_t lower_bound(const index_t* v, std::size_t n, index_t x) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// ---- the sliced ELLPACK form of the diagonal block (host execution spaces) ----------------------

/// The chunk heights C (rows per chunk) the SELL form may use, largest first, each a multiple
/// of 4: the constructor takes the largest whose padding stays within sell_max_padding.
inline constexpr int sell_heights[] = {16, 8, 4};
/// The chunk height of the SELL form on devices: a warp's 32 rows, one per thread (SellRows).
/// (A multiple of 4 as well: the constructor measures widths in groups of 4 rows.)
inline constexpr int sell_device_height = 32;
/// The SELL form is used while its padding stays within this fraction of the block's entries.
inline constexpr double sell_max_padding = 0.25;

/// The diagonal block in sliced ELLPACK form with sigma = 1 (SELL-C-1: the rows keep their
/// order, so y needs no permutation). The rows are cut into chunks of C consecutive rows. Chunk
/// c stores, for each of its C rows, as many slots as its longest row has entries (its width),
/// column-major: slot k of row c C + l is at chunk_ptr(c) + k C + l, so the k-th entries of the
/// C rows lie side by side. Slots past a row's end, and the rows past the last row in the last
/// chunk, are padding: value 0 and a valid column (the row's last column, or 0).
template <class T, class M>
struct SellBlock {
  using ints = typename LocalMatrix<T, M>::index_type::non_const_type;
  using offsets = typename LocalMatrix<T, M>::row_map_type::non_const_type;
  using values = typename LocalMatrix<T, M>::values_type::non_const_type;
  offsets chunk_ptr;  // first slot of each chunk (chunks + 1 entries)
  ints col;           // local column of each slot
  values val;         // value of each slot (0 in padding)
  offsets row_ptr;    // the CSR row offsets: not read by the product, only to give the CSR form back
};

/// What a SELL product reads and writes: y = alpha A x + beta y with A a SellBlock's chunks.
template <class T, class M>
struct SellOperands {
  Kokkos::View<const int*, M> chunk_ptr, col;
  Kokkos::View<const T*, M> val;
  VecView<const T, M> x;
  VecView<T, M> y;
  T alpha, beta;
};

/// y = alpha A x + beta y over the chunks of a SellBlock, one chunk per work item, with the
/// semantics of KokkosSparse::spmv: beta == 0: y is not read; alpha == 0: neither A nor x is
/// read. The C rows of a chunk accumulate in C independent local sums, so their multiply-add
/// chains overlap and the compiler can vectorise across them (no intrinsics).
template <class T, class M, int C>
struct SellProduct {
  SellOperands<T, M> o;
  int rows;
  KOKKOS_INLINE_FUNCTION void operator()(const int c) const {
    const int first = o.chunk_ptr(c);
    const int width = o.alpha == T(0) ? 0 : (o.chunk_ptr(c + 1) - first) / C;
    T acc[C];
    for (int l = 0; l < C; ++l) acc[l] = T(0);
    for (int k = 0; k < width; ++k) {
      const int s = first + k * C;
      for (int l = 0; l < C; ++l) acc[l] += o.val(s + l) * o.x(o.col(s + l));
    }
    const int r = c * C;
    const int lanes = rows - r < C ? rows - r : C;
    if (o.beta == T(0))
      for (int l = 0; l < lanes; ++l) o.y(r + l) = o.alpha * acc[l];
    else
      for (int l = 0; l < lanes; ++l) o.y(r + l) = o.alpha * acc[l] + o.beta * o.y(r + l);
  }
};

/// y = alpha A x + beta y over the rows of a SellBlock with chunks of C rows, one row per work
/// item (semantics of SellProduct). On a GPU the C rows of a chunk are C consecutive threads,
/// whose k-th slots lie side by side: every load of the values and columns is coalesced, and
/// the loads of a row's slots are independent (all in flight at once). The row's products are
/// added in its entries' order.
template <class T, class M, int C>
struct SellRows {
  SellOperands<T, M> o;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int c = i / C;
    const int first = o.chunk_ptr(c) + (i - c * C);
    const int width = o.alpha == T(0) ? 0 : (o.chunk_ptr(c + 1) - o.chunk_ptr(c)) / C;
    T acc = T(0);
    for (int k = 0; k < width; ++k) acc += o.val(first + k * C) * o.x(o.col(first + k * C));
    o.y(i) = o.beta == T(0) ? o.alpha * acc : o.alpha * acc + o.beta * o.y(i);
  }
};

/// The CSR columns and values of row i of a SellBlock with chunks of C rows (the inverse of
/// the constructor's placement; the row offsets are the SellBlock's row_ptr).
template <class T, class M>
struct SellToCsr {
  SellBlock<T, M> s;
  typename SellBlock<T, M>::ints col;
  typename SellBlock<T, M>::values val;
  int C;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int slot = s.chunk_ptr(i / C) + i % C;
    for (int k = 0; k < s.row_ptr(i + 1) - s.row_ptr(i); ++k) {
      col(s.row_ptr(i) + k) = s.col(slot + k * C);
      val(s.row_ptr(i) + k) = s.val(slot + k * C);
    }
  }
};
}  // namespace spmd::sparse::impl
