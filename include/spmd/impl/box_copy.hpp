#pragma once
// The communication engine's copy part: the one kernel module that moves boxes of points between
// arrays' storage and message buffers (halo exchanges, redistributions, moved operands).
//
// A table (BoxCopies) holds segments: boxes of an M-d index space j. A segment's point j is read
// at source element `src + scoef . j` and written at destination element `dst + dcoef . j`
// (linear element offsets into a storage; the coefficients are the plan's, the same for every
// segment: storage strides, times the selection's steps where a redistribution reads with
// steps), or, on the buffer side, at the segment's place in a message buffer in row-major order.
// With several fields (up to 8 arrays of one layout in one halo exchange) the buffer holds
// segment s of field f at `nf * offset_s + f * count_s + (row-major index of j)`, so every
// segment, hence every message, stays contiguous.
//
// Kernels: on devices one launch over every point of every segment and field (a binary search
// for the segment, the index split with 32-bit arithmetic when small enough); on host execution
// spaces one strided loop per segment and field (contiguous inner loops where both sides have
// unit stride), since a per-point search and division would cost more than the copy.

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

#include "spmd/impl/kernels.hpp"
#include "spmd/impl/forms.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/types.hpp"

namespace spmd::impl {

template <int M>
struct CopySegment {
  Kokkos::Array<int, M> ext;  // extents of the box
  index_t src;                // source element of the box's first point (storage side)
  index_t dst;                // destination element of the box's first point (storage side)
  index_t offset;             // first point of the segment among the table's points
  index_t count;              // points
};

enum class CopyKind { pack, unpack, direct };

/// Most arrays one copy moves at once.
constexpr int max_fields = 8;

template <class T>
using FieldPtrs = Kokkos::Array<T*, max_fields>;

/// Device form: every point of every segment and field in one launch.
template <class T, int M, CopyKind K>
struct FlatCopy {
  FieldPtrs<const T> src;
  FieldPtrs<T> dst;
  const T* in;  // unpack: the buffer read
  T* out;       // pack: the buffer written
  int nfields;
  index_t total;  // points per field
  Kokkos::Array<index_t, M> scoef, dcoef;
  const CopySegment<M>* segs;
  int nsegs;
  bool narrow;  // total * nfields < 2^32: split with 32-bit arithmetic

  KOKKOS_INLINE_FUNCTION void operator()(const index_t p) const {
    int f;
    index_t q;
    if (narrow) {
      const unsigned u = static_cast<unsigned>(p), n = static_cast<unsigned>(total);
      f = static_cast<int>(u / n);
      q = u - static_cast<unsigned>(f) * n;
    } else {
      f = static_cast<int>(p / total);
      q = p - f * total;
    }
    int lo = 0, hi = nsegs - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (segs[mid].offset <= q)
        lo = mid;
      else
        hi = mid - 1;
    }
    const CopySegment<M>& g = segs[lo];
    const index_t k = q - g.offset;
    index_t s = g.src, d = g.dst;
    if (narrow) {
      unsigned r = static_cast<unsigned>(k);
      for (int a = M - 1; a >= 0; --a) {
        const unsigned e = static_cast<unsigned>(g.ext[a]);
        const index_t j = r % e;
        r /= e;
        s += scoef[a] * j;
        d += dcoef[a] * j;
      }
    } else {
      index_t r = k;
      for (int a = M - 1; a >= 0; --a) {
        const index_t j = r % g.ext[a];
        r /= g.ext[a];
        s += scoef[a] * j;
        d += dcoef[a] * j;
      }
    }
    const index_t at = nfields * g.offset + f * g.count + k;
    if constexpr (K == CopyKind::pack)
      out[at] = src[f][s];
    else if constexpr (K == CopyKind::unpack)
      dst[f][d] = in[at];
    else
      dst[f][d] = src[f][s];
  }
};

/// Host form: the rows of one segment of one field; `sc`/`dc` address each side (storage
/// coefficients, or the buffer's row-major strides of the box).
template <class T, int M>
struct RowCopy {
  const T* s;
  T* d;
  Kokkos::Array<index_t, M> sc, dc;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi) const {
    index_t si = 0, di = 0;
    for (int a = 0; a < M - 1; ++a) {
      si += sc[a] * k[a];
      di += dc[a] * k[a];
    }
    const T* sr = s + si;
    T* dr = d + di;
    const index_t ss = sc[M - 1], ds = dc[M - 1];
    if (ss == 1 && ds == 1)
      for (index_t i = lo; i < hi; ++i) dr[i] = sr[i];
    else
      for (index_t i = lo; i < hi; ++i) dr[i * ds] = sr[i * ss];
  }
};

/// A table of segments with the plan's storage addressing, and the kernels that move them.
template <class T, int M, class Mem>
class BoxCopies {
 public:
  BoxCopies() = default;
  /// Segments `segs` (their offsets must be the running sum of their counts, in order), read
  /// with coefficients `scoef` and written with `dcoef` on the storage sides. Local (uploads the
  /// table to Mem).
  BoxCopies(std::vector<CopySegment<M>> segs, const Kokkos::Array<index_t, M>& scoef,
            const Kokkos::Array<index_t, M>& dcoef, const std::string& label)
      : host_(std::move(segs)), scoef_(scoef), dcoef_(dcoef) {
    for (const auto& g : host_) total_ += g.count;
    dev_ = Kokkos::View<CopySegment<M>*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), host_.size());
    auto mirror = Kokkos::create_mirror_view(dev_);
    for (std::size_t i = 0; i < host_.size(); ++i) mirror(i) = host_[i];
    Kokkos::deep_copy(dev_, mirror);
  }

  /// Points per field. Local.
  index_t total() const { return total_; }
  const std::vector<CopySegment<M>>& segments() const { return host_; }

  /// buffer <- fields (storage side: source). Asynchronous on `exec`. Local.
  template <class Exec>
  void pack(const Exec& exec, const char* label, const FieldPtrs<const T>& fields, int nf, T* buf) const {
    run<CopyKind::pack>(exec, label, fields, FieldPtrs<T>{}, nullptr, buf, nf);
  }
  /// fields <- buffer (storage side: destination). Asynchronous on `exec`. Local.
  template <class Exec>
  void unpack(const Exec& exec, const char* label, const T* buf, const FieldPtrs<T>& fields, int nf) const {
    run<CopyKind::unpack>(exec, label, FieldPtrs<const T>{}, fields, buf, nullptr, nf);
  }
  /// dst fields <- src fields, storage to storage (the two must not overlap). Local.
  template <class Exec>
  void direct(const Exec& exec, const char* label, const FieldPtrs<const T>& src, const FieldPtrs<T>& dst,
              int nf) const {
    run<CopyKind::direct>(exec, label, src, dst, nullptr, nullptr, nf);
  }

 private:
  template <CopyKind K, class Exec>
  void run(const Exec& exec, const char* label, const FieldPtrs<const T>& src, const FieldPtrs<T>& dst, const T* in,
           T* out, int nf) const {
    if (total_ == 0 || nf == 0) return;
    if (!forms<typename Exec::memory_space>().flat_copies) {
      for (const auto& g : host_)
        for (int f = 0; f < nf; ++f) {
          Kokkos::Array<index_t, M> rowmajor;
          index_t st = 1;
          for (int a = M - 1; a >= 0; --a) {
            rowmajor[a] = st;
            st *= g.ext[a];
          }
          const index_t at = nf * g.offset + f * g.count;
          RowCopy<T, M> k{};
          if constexpr (K == CopyKind::pack)
            k = RowCopy<T, M>{src[f] + g.src, out + at, scoef_, rowmajor};
          else if constexpr (K == CopyKind::unpack)
            k = RowCopy<T, M>{in + at, dst[f] + g.dst, rowmajor, dcoef_};
          else
            k = RowCopy<T, M>{src[f] + g.src, dst[f] + g.dst, scoef_, dcoef_};
          for_box(exec, label, BoxItems<M>::template make<Exec>(g.ext), k);
        }
      return;
    }
    const index_t n = total_ * nf;
    const FlatCopy<T, M, K> k{src,
                              dst,
                              in,
                              out,
                              nf,
                              total_,
                              scoef_,
                              dcoef_,
                              dev_.data(),
                              static_cast<int>(host_.size()),
                              n <= static_cast<index_t>(0xffffffffu)};
    Kokkos::parallel_for(label, ItemPolicy<Exec>(exec, 0, n), k);
  }

  std::vector<CopySegment<M>> host_;
  Kokkos::View<CopySegment<M>*, Mem> dev_;
  Kokkos::Array<index_t, M> scoef_{}, dcoef_{};
  index_t total_ = 0;
};

/// Row-major element strides of a storage with extents `e` (LayoutRight). Local.
template <int N, class E>
Kokkos::Array<index_t, N> strides_of(const E& e) {
  Kokkos::Array<index_t, N> s;
  index_t st = 1;
  for (int d = N - 1; d >= 0; --d) {
    s[d] = st;
    st *= static_cast<index_t>(e[d]);
  }
  return s;
}

}  // namespace spmd::impl
