#pragma once
// The geometry of a halo exchange plan (spmd::HaloExchange): which storage boxes go to which
// neighbour, computed once from the replicated distribution.
//
// For every direction o in {-1, 0, 1}^N except 0 (`face` keeps those with one nonzero entry) this
// rank sends the `width`-thick layer of its owned block on the o side to neighbour(o), and fills
// its halo layer on the o side from neighbour(o) (which sent it in direction -o). A neighbour that is this rank
// itself (a periodic axis with one rank along it) is no message: the layer is copied storage to
// storage (a `self` segment). Sender and receiver order one pair's segments alike, by the
// direction the data travels in, so each peer's segments are contiguous in the buffers and
// travel as one message; at most one message per ordered pair of ranks, so the plan needs a
// single tag.

#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/box_copy.hpp"
#include "spmd/impl/messages.hpp"

namespace spmd::impl {

template <int N>
struct HaloLayout {
  std::vector<Message> sends, recvs;
  index_t send_total = 0, recv_total = 0;
  std::vector<CopySegment<N>> pack, unpack, self;  // storage offsets in `src` (pack, self) / `dst`
  Kokkos::Array<index_t, N> strides{};             // the storage's element strides
};

/// The layout of an exchange of `width[d]` layers along each axis with `pattern`. Local.
template <int N>
HaloLayout<N> halo_layout(const Distribution<N>& dist, Pattern pattern,
                          const std::common_type_t<std::array<int, N>>& width) {
  HaloLayout<N> out;
  const int me = dist.comm().rank();
  const Box<N>& own = dist.owned();
  const auto& h = dist.halo();
  out.strides = strides_of<N>(dist.local_extents_with_halo());
  auto linear = [&](const Kokkos::Array<int, N>& lo) {
    index_t off = 0;
    for (int d = 0; d < N; ++d) off += lo[d] * out.strides[d];
    return off;
  };
  struct Pending {
    int peer, order;
    Kokkos::Array<int, N> lo, ext;
  };
  std::vector<Pending> outs, ins;
  int ndir = 1;
  for (int d = 0; d < N; ++d) ndir *= 3;
  for (int code = 0; code < ndir; ++code) {
    std::array<int, N> o{};
    int c = code, nonzero = 0;
    for (int d = 0; d < N; ++d) {
      o[d] = c % 3 - 1;
      c /= 3;
      nonzero += o[d] != 0;
    }
    if (nonzero == 0 || (pattern == Pattern::face && nonzero > 1)) continue;
    const int peer = dist.neighbor(o);
    if (peer < 0) continue;
    Pending s{peer, code, {}, {}}, r{peer, 0, {}, {}};
    index_t count = 1;
    for (int d = 0; d < N; ++d) {
      const int e = static_cast<int>(own.extent(d));
      if (o[d] == 0) {
        s.lo[d] = r.lo[d] = h[d];
        s.ext[d] = r.ext[d] = e;
      } else {
        s.ext[d] = r.ext[d] = width[d];
        s.lo[d] = o[d] < 0 ? h[d] : h[d] + e - width[d];
        r.lo[d] = o[d] < 0 ? h[d] - width[d] : h[d] + e;
      }
      count *= s.ext[d];
    }
    if (count == 0) continue;  // the neighbour computes the same (same geometry) and skips too
    // `back`: the number of -o, the direction the matching data was sent in by the peer
    int back = 0;
    for (int d = N - 1; d >= 0; --d) back = back * 3 + (-o[d] + 1);
    r.order = back;
    outs.push_back(s);
    ins.push_back(r);
  }
  auto by_peer = [](const Pending& a, const Pending& b) {
    return a.peer != b.peer ? a.peer < b.peer : a.order < b.order;
  };
  std::sort(outs.begin(), outs.end(), by_peer);
  std::sort(ins.begin(), ins.end(), by_peer);
  auto size_of = [](const Pending& p) {
    index_t n = 1;
    for (int d = 0; d < N; ++d) n *= p.ext[d];
    return n;
  };
  auto layout = [&](const std::vector<Pending>& list, std::vector<Message>& messages, std::vector<CopySegment<N>>& segs,
                    index_t& total, bool sending) {
    for (const auto& p : list) {
      if (p.peer == me) continue;
      const index_t n = size_of(p);
      const index_t at = linear(p.lo);
      segs.push_back(CopySegment<N>{p.ext, sending ? at : 0, sending ? 0 : at, total, n});
      if (!messages.empty() && messages.back().rank == p.peer)
        messages.back().count += n;
      else
        messages.push_back(Message{p.peer, total, n});
      total += n;
    }
  };
  layout(outs, out.sends, out.pack, out.send_total, true);
  layout(ins, out.recvs, out.unpack, out.recv_total, false);
  // Wraps onto this rank: the layer sent towards o lands in this rank's own halo on the -o side.
  index_t self_total = 0;
  for (const auto& r : ins)
    if (r.peer == me)
      for (const auto& s : outs)
        if (s.peer == me && s.order == r.order) {
          const index_t n = size_of(s);
          out.self.push_back(CopySegment<N>{s.ext, linear(s.lo), linear(r.lo), self_total, n});
          self_total += n;
        }
  return out;
}

}  // namespace spmd::impl
