#pragma once
// Scans along an axis, implementation: the operand evaluated into the result array (laid out on
// the operand's process grid), an inclusive scan of every line of the rank's block along the
// axis (one kernel of the kernel layer), an exclusive scan of the lines' block totals among the
// ranks along that axis (MPI_Exscan on the sub-communicator of impl::axis_group), and the
// offsets folded into the block (a second kernel, skipped by the first rank along the axis).

#include <Kokkos_Core.hpp>

#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/impl/axis_reduce_impl.hpp"

namespace spmd::impl {

/// The inclusive scan (sum or prod) along `axis` of a compact row-major block of extents ext,
/// in place; tot[line] = the line's total (lines: the block with extent 1 along the axis, compact
/// row-major). With `offsets`, instead v = off[line] (op) v at every point (the second pass).
/// Body of for_box over the lines' box.
template <class T, bool Prod, int N>
struct ScanLines {
  T* v;
  T* tot;  // first pass: written; second pass: the offsets read
  Kokkos::Array<index_t, N> ext;
  Kokkos::Array<index_t, N> lext;  // ext with 1 along the axis
  int axis;
  bool offsets;
  KOKKOS_FORCEINLINE_FUNCTION static void op(T& a, const T b) {
    if constexpr (Prod)
      a *= b;
    else
      a += b;
  }
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi) const {
    index_t base = 0, line = 0, stride = 1;
    for (int d = 0; d < N; ++d) {
      base = base * ext[d] + k[d];
      line = line * lext[d] + k[d];
    }
    for (int d = N - 1; d > axis; --d) stride *= ext[d];
    const index_t len = ext[axis];
    if (axis == N - 1) {  // one line, contiguous
      T* p = v + base;
      if (offsets) {
        const T o = tot[line];
        for (index_t j = 0; j < len; ++j) {
          T x = o;
          op(x, p[j]);
          p[j] = x;
        }
      } else {
        for (index_t j = 1; j < len; ++j) op(p[j], p[j - 1]);
        if (len > 0) tot[line] = p[len - 1];
      }
      return;
    }
    // lines lo..hi along the last axis, side by side: the inner loop is contiguous
    if (offsets) {
      for (index_t j = 0; j < len; ++j)
        for (index_t i = lo; i < hi; ++i) {
          T x = tot[line + i];
          op(x, v[base + j * stride + i]);
          v[base + j * stride + i] = x;
        }
      return;
    }
    for (index_t j = 1; j < len; ++j)
      for (index_t i = lo; i < hi; ++i) op(v[base + j * stride + i], v[base + (j - 1) * stride + i]);
    if (len > 0)
      for (index_t i = lo; i < hi; ++i) tot[line + i] = v[base + (len - 1) * stride + i];
  }
};

/// The element type of a scan of V (NumPy: bool and narrower integers accumulate in the platform
/// integer).
template <class V>
using scan_t = std::conditional_t<std::is_integral_v<V> && sizeof(V) < sizeof(index_t), index_t, V>;

/// cumsum (Prod false) or cumprod of e along axis `a0` (may count from the end), into a new
/// array on e's first operand's process grid (copied first when that operand is a slice), on
/// `exec`. Collective.
template <bool Prod, class Exec, class E>
Array<scan_t<typename E::value_type>, E::rank, typename E::memory_space> scan_axis(const Exec& exec, const char* fn,
                                                                                   const E& e, const int a0) {
  constexpr int N = E::rank;
  using T = scan_t<typename E::value_type>;
  using Mem = typename E::memory_space;
  const auto mask = axis_mask<N>(fn, std::array<int, 1>{a0}, e.shape());
  int axis = 0;
  for (int a = 0; a < N; ++a)
    if (mask[a]) axis = a;
  const auto& anchor = first_terminal(e);
  // The result's layout: the operand's grid (a whole-array operand is then read in place).
  const auto& dist = anchor.parent().distribution();
  std::vector<int> dims(N, 0);
  if constexpr (std::decay_t<decltype(anchor.parent())>::rank == N)
    if (anchor.parent().shape() == e.shape()) dims.assign(dist.dims().begin(), dist.dims().end());
  Array<T, N, Mem> out(Distribution<N>(anchor.comm(), e.shape(), ProcessGrid{dims}), Label{fn}, Init::none);
  assign(exec, out, e);
  const Box<N> box = out.owned();
  Kokkos::Array<index_t, N> ext, lext;
  index_t lines = 1;
  for (int d = 0; d < N; ++d) {
    ext[d] = box.extent(d);
    lext[d] = d == axis ? 1 : ext[d];
    lines *= lext[d];
  }
  Kokkos::View<T*, Mem> tot(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::scan::block_totals"),
                            static_cast<std::size_t>(lines));
  ScanLines<T, Prod, N> body{out.local_with_halo().data(), tot.data(), ext, lext, axis, false};
  const auto items = BoxItems<N>::template make<Exec>(lext);
  if (box.size() > 0) for_box(exec, "spmd::scan::lines", items, body);
  // Offsets: the exclusive scan of the block totals along the axis.
  const Comm group = axis_group(out.distribution(), mask);
  if (group.size() > 1 && lines > 0) {
    auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), tot);
    if (box.size() > 0)
      Kokkos::deep_copy(exec, host, tot);
    else
      Kokkos::deep_copy(host, T(Prod ? 1 : 0));  // an empty block along the axis adds nothing
    fence(exec, "spmd::scan before MPI_Exscan");
    std::vector<T> off(static_cast<std::size_t>(lines));
    SPMD_MPI_CHECK(MPI_Exscan(host.data(), off.data(), static_cast<int>(lines), mpi_type<T>(),
                              mpi_op(Prod ? Op::prod : Op::sum), group.raw()),
                   fn);
    if (group.rank() > 0 && box.size() > 0) {
      for (std::size_t i = 0; i < off.size(); ++i) host(i) = off[i];
      Kokkos::deep_copy(exec, tot, host);
      body.offsets = true;
      for_box(exec, "spmd::scan::offsets", items, body);
      fence(exec, "spmd::scan: host offsets released");  // `host` is freed on return
    }
  }
  return out;
}

}  // namespace spmd::impl
