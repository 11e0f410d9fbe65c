#pragma once
// Template bodies of spmd::Distribution<N>.

#include <sstream>

#include "spmd/distribution.hpp"

namespace spmd {

template <int N>
Distribution<N>::Distribution(const Comm& comm, const index_type& shape, const impl::DistributionOptions& opts) {
  const char* fn = "spmd::Distribution";
  const int p = comm.size();
  auto per_axis = [&](const auto& v, auto fallback, const char* what) {
    std::array<decltype(fallback), N> out{};
    if (v.empty())
      out.fill(fallback);
    else if (v.size() == 1)
      out.fill(static_cast<decltype(fallback)>(v[0]));
    else if (v.size() == static_cast<std::size_t>(N))
      for (int d = 0; d < N; ++d) out[d] = static_cast<decltype(fallback)>(v[d]);
    else
      throw Error(impl::str(fn, ": ", what, " has ", v.size(), " entries for a ", N, "-d shape"));
    return out;
  };
  // Option lists of the wrong length: agreed first (a rank alone may have passed one), so that
  // no rank waits in the allgather below while another throws.
  std::array<int, N> halo{};
  std::array<bool, N> periodic{};
  std::array<int, N> dims{};
  std::string problem;
  try {
    halo = per_axis(opts.halo, 0, "halo(...)");
    periodic = per_axis(opts.periodic, false, "periodic(...)");
    if (!opts.dims.empty()) {
      if (opts.dims.size() != static_cast<std::size_t>(N))
        throw Error(impl::str(fn, ": grid(...) has ", opts.dims.size(), " entries for a ", N, "-d shape"));
      for (int d = 0; d < N; ++d) dims[d] = opts.dims[d];
    }
  } catch (const Error& e) {
    problem = e.what();
  }
  comm.check(problem.empty(), problem);

  // Everything every rank passed, gathered, so each rank reaches the same verdict.
  constexpr int rec = 4 * N;
  std::array<index_t, rec> mine{};
  for (int d = 0; d < N; ++d) {
    mine[d] = shape[d];
    mine[N + d] = dims[d];
    mine[2 * N + d] = halo[d];
    mine[3 * N + d] = periodic[d] ? 1 : 0;
  }
  const auto all = comm.allgather(mine.data(), rec);
  for (int r = 1; r < p; ++r) {
    for (int k = 0; k < rec; ++k) {
      if (all[static_cast<std::size_t>(r) * rec + k] == all[k]) continue;
      const char* what[] = {"global shapes", "process grids", "halo widths", "periodic settings"};
      std::array<index_t, N> a{}, b{};
      const int part = k / N;
      for (int d = 0; d < N; ++d) {
        a[d] = all[part * N + d];
        b[d] = all[static_cast<std::size_t>(r) * rec + part * N + d];
      }
      throw Error::replicated(impl::str(fn, ": the ", what[part], " differ across ranks: rank 0 passed ",
                                        impl::shape_str(a), ", rank ", r, " passed ", impl::shape_str(b)));
    }
  }
  for (int d = 0; d < N; ++d) {
    if (shape[d] < 0)
      throw Error::replicated(impl::str(fn, ": negative extent in global shape ", impl::shape_str(shape)));
    if (halo[d] < 0) throw Error::replicated(impl::str(fn, ": negative halo width ", impl::shape_str(halo)));
    if (dims[d] < 0) throw Error::replicated(impl::str(fn, ": negative process grid entry ", impl::shape_str(dims)));
  }
  // Process grid: given, partly given (0 = choose) or automatic.
  {
    std::vector<int> fixed(dims.begin(), dims.end());
    long long prod = 1;
    bool any_free = false;
    for (int d = 0; d < N; ++d) {
      if (dims[d] == 0)
        any_free = true;
      else
        prod *= dims[d];
    }
    if (!any_free && prod != p)
      throw Error::replicated(impl::str(fn, ": process grid ", impl::shape_str(dims), " has ", prod,
                                        " ranks but the communicator has ", p));
    if (any_free && (prod == 0 || p % prod != 0))
      throw Error::replicated(impl::str(fn, ": process grid ", impl::shape_str(dims),
                                        " (0 = automatic) cannot be completed for ", p, " ranks"));
    if (any_free) {
      auto chosen = impl::choose_grid(std::vector<index_t>(shape.begin(), shape.end()), p, fixed,
                                      std::vector<int>(halo.begin(), halo.end()),
                                      std::vector<bool>(periodic.begin(), periodic.end()));
      for (int d = 0; d < N; ++d) dims[d] = chosen[d];
    }
  }
  // Halos must be filled from the nearest neighbour: no block along an axis with neighbours may
  // be narrower than the halo there.
  for (int d = 0; d < N; ++d) {
    const bool has_neighbors = dims[d] > 1 || periodic[d];
    if (halo[d] == 0 || !has_neighbors || shape[d] == 0) continue;
    const index_t smallest = shape[d] / dims[d];
    if (smallest < halo[d])
      throw Error::replicated(impl::str(
          fn, ": halo width ", halo[d], " on axis ", d, " is wider than the smallest block there (", smallest, " of ",
          shape[d], " indices over ", dims[d], " ranks); use fewer ranks along that axis or a narrower halo"));
  }

  auto data = std::make_shared<Data>(Data{comm, shape, dims, halo, periodic, {}, {}});
  std::shared_ptr<const Data> tmp = data;
  d_ = tmp;
  data->coords = coords_of(comm.rank());
  data->owned = owned_by(comm.rank());
}

template <int N>
std::array<int, N> Distribution<N>::coords_of(int rank) const {
  std::array<int, N> c{};
  for (int d = N - 1; d >= 0; --d) {
    c[d] = rank % d_->dims[d];
    rank /= d_->dims[d];
  }
  return c;
}

template <int N>
int Distribution<N>::rank_of(const std::array<int, N>& c) const {
  int r = 0;
  for (int d = 0; d < N; ++d) r = r * d_->dims[d] + c[d];
  return r;
}

template <int N>
Box<N> Distribution<N>::owned_by(int rank) const {
  const auto c = coords_of(rank);
  Box<N> b;
  for (int d = 0; d < N; ++d) {
    b.lo[d] = impl::block_start(d_->shape[d], d_->dims[d], c[d]);
    b.hi[d] = b.lo[d] + impl::block_extent(d_->shape[d], d_->dims[d], c[d]);
  }
  return b;
}

template <int N>
int Distribution<N>::owner(const index_type& i) const {
  std::array<int, N> c{};
  for (int d = 0; d < N; ++d) {
    if (i[d] < 0 || i[d] >= d_->shape[d])
      throw Error(impl::str("spmd::Distribution::owner: index ", impl::shape_str(i), " is outside the shape ",
                            impl::shape_str(d_->shape)));
    c[d] = impl::block_of(d_->shape[d], d_->dims[d], i[d]);
  }
  return rank_of(c);
}

template <int N>
int Distribution<N>::neighbor(const std::array<int, N>& off) const {
  std::array<int, N> c = d_->coords;
  for (int d = 0; d < N; ++d) {
    c[d] += off[d];
    if (c[d] < 0 || c[d] >= d_->dims[d]) {
      if (!d_->periodic[d]) return -1;
      c[d] = ((c[d] % d_->dims[d]) + d_->dims[d]) % d_->dims[d];
    }
  }
  return rank_of(c);
}

template <int N>
std::array<int, N> Distribution<N>::local_extents_with_halo() const {
  std::array<int, N> e{};
  for (int d = 0; d < N; ++d) e[d] = static_cast<int>(d_->owned.extent(d)) + 2 * d_->halo[d];
  return e;
}

template <int N>
Distribution<N> Distribution<N>::with_halo(const std::array<int, N>& h) const {
  impl::DistributionOptions o;
  o.halo.assign(h.begin(), h.end());
  o.periodic.assign(d_->periodic.begin(), d_->periodic.end());
  o.dims.assign(d_->dims.begin(), d_->dims.end());
  return Distribution(d_->comm, d_->shape, o);
}

template <int N>
std::string Distribution<N>::describe() const {
  if (!d_) return "null distribution";
  std::ostringstream os;
  os << "shape " << impl::shape_str(d_->shape) << " on process grid " << impl::shape_str(d_->dims) << ", halo "
     << impl::shape_str(d_->halo);
  bool any = false;
  for (int d = 0; d < N; ++d) any = any || d_->periodic[d];
  if (any) os << ", periodic " << impl::shape_str(d_->periodic);
  return os.str();
}

}  // namespace spmd
