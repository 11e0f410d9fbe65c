// The communication backends and overlap: Backend::ipc under every kind of plan (halo exchanges of
// one and several arrays, grown plans, many consecutive exchanges, redistributions whose ranks
// send without receiving, the sparse ghost import), SPMD_BACKEND, and the overlapped assignment
// (spmd::assign(pending, dst, e)) against the same statement after a plain exchange, on grids of
// 1-4 ranks, periodic and not, in place and double buffered. Serial references: the halo values
// of fill_pattern (spmd_test.hpp), the 2-D 5-point Laplacian by its definition.
#include "spmd_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using spmd::Array;
using spmd::Backend;
using spmd::Box;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::Pattern;
using spmd::slice;
using spmd::testing::world;

namespace {

/// SPMD_BACKEND set for the scope (every rank sets the same), restored after.
class ScopedBackend {
 public:
  explicit ScopedBackend(const char* value) {
    const char* old = std::getenv("SPMD_BACKEND");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("SPMD_BACKEND", value, 1);
  }
  ~ScopedBackend() {
    if (had_)
      setenv("SPMD_BACKEND", old_.c_str(), 1);
    else
      unsetenv("SPMD_BACKEND");
  }

 private:
  bool had_ = false;
  std::string old_;
};

/// This rank's storage (halo included) of `a` on the host.
template <int N>
std::vector<double> storage_of(const Array<double, N>& a) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  return std::vector<double>(h.data(), h.data() + h.span());
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) return false;  // bitwise for the same arithmetic (no NaN here)
  return true;
}

bool has_ipc() {
  const auto b = spmd::testing::backends();
  return std::find(b.begin(), b.end(), Backend::ipc) != b.end();
}

// ---- Backend::ipc ------------------------------------------------------------------------------------

/// The 5-point Laplacian of `x` (owned points, zero outside the grid) by its definition, on the
/// gathered grid. Local.
std::vector<double> laplacian_ref(const std::vector<double>& x, index_t nx, index_t ny) {
  std::vector<double> y(x.size());
  for (index_t i = 0; i < nx; ++i)
    for (index_t j = 0; j < ny; ++j) {
      auto at = [&](index_t a, index_t b) { return a < 0 || b < 0 || a >= nx || b >= ny ? 0.0 : x[a * ny + b]; };
      y[i * ny + j] = 4.0 * at(i, j) - at(i - 1, j) - at(i + 1, j) - at(i, j - 1) - at(i, j + 1);
    }
  return y;
}

}  // namespace

TEST(Backends, EnvironmentOverride) {
  {
    ScopedBackend env("ipc");
    EXPECT_EQ(spmd::impl::env_backend(), Backend::ipc);
    Distribution<1> d(world(), {16}, spmd::halo(1));
    // collectives have no ipc form: they run on MPI
    EXPECT_EQ(spmd::impl::resolve_backend<spmd::DefaultMemorySpace>(world(), Backend::automatic, "test"), Backend::mpi);
    if (has_ipc()) {
      spmd::HaloExchange<double, 1> plan(d, Pattern::face);
      EXPECT_EQ(plan.backend(), Backend::ipc);
    }
  }
  {
    // The environment is read on each rank: a local error (spmd::Runtime agrees on it at start).
    ScopedBackend env("bogus");
    try {
      (void)spmd::impl::env_backend();
      ADD_FAILURE() << "SPMD_BACKEND=bogus was accepted";
    } catch (const spmd::Error& e) {
      EXPECT_FALSE(e.collective());
      EXPECT_NE(std::string(e.what()).find("SPMD_BACKEND='bogus'"), std::string::npos) << e.what();
    }
  }
  EXPECT_STREQ(spmd::to_string(Backend::ipc), "ipc");
}

TEST(Backends, IpcHaloGrowsAndRepeats) {
  if (!has_ipc()) GTEST_SKIP() << "ipc not usable here";
  for (const bool periodic : {false, true}) {
    const Distribution<2> d = periodic ? Distribution<2>(world(), {9, 7}, spmd::halo(1), spmd::periodic())
                                       : Distribution<2>(world(), {9, 7}, spmd::halo(1));
    spmd::HaloExchange<double, 2> ipc(d, Pattern::box, d.halo(), Backend::ipc);
    spmd::HaloExchange<double, 2> mpi(d, Pattern::box, d.halo(), Backend::mpi);
    ASSERT_EQ(ipc.backend(), Backend::ipc);
    auto a = spmd::zeros<double>(d), b = spmd::zeros<double>(d), c = spmd::zeros<double>(d);
    auto ra = spmd::zeros<double>(d), rb = spmd::zeros<double>(d), rc = spmd::zeros<double>(d);
    bool ok = true;
    // one array, then three (the buffers grow: the peers map them again), then one, many times
    for (int round = 0; round < 12; ++round) {
      const double shift = 10.0 * round;
      for (auto* x : {&a, &ra}) spmd::testing::fill_pattern(*x, shift);
      for (auto* x : {&b, &rb}) spmd::testing::fill_pattern(*x, shift + 1000.0);
      for (auto* x : {&c, &rc}) spmd::testing::fill_pattern(*x, shift - 1000.0);
      if (round % 4 == 1) {
        ipc.exchange(a, b, c);
        mpi.exchange(ra, rb, rc);
        ok = ok && same(storage_of(b), storage_of(rb)) && same(storage_of(c), storage_of(rc));
      } else {
        ipc.exchange(a);
        mpi.exchange(ra);
      }
      ok = ok && same(storage_of(a), storage_of(ra));
    }
    spmd::testing::expect_all(ok, periodic ? "ipc halo, periodic" : "ipc halo");
  }
}

TEST(Backends, IpcRedistributionOneWay) {
  if (!has_ipc()) GTEST_SKIP() << "ipc not usable here";
  // Two rows on a column of ranks (ranks 2 and 3 own nothing) to a row of ranks (each owns
  // columns) and back: ranks that only receive, ranks that only send.
  const Index<2> shape{2, 7};
  Distribution<2> from(world(), shape, spmd::grid({world().size(), 1}));
  Distribution<2> to(world(), shape, spmd::grid({1, world().size()}));
  auto src = spmd::zeros<double>(from), dst = spmd::zeros<double>(to), back = spmd::zeros<double>(from);
  spmd::testing::fill_pattern(src, 3.0);
  spmd::Redistribution<double, 2> forward(to, from, Backend::ipc), reverse(from, to, Backend::ipc);
  ASSERT_EQ(forward.backend(), Backend::ipc);
  bool ok = true;
  for (int k = 0; k < 3; ++k) {
    forward.apply(dst, src);
    reverse.apply(back, dst);
    ok = ok && spmd::allgather(back) == spmd::allgather(src) && spmd::allgather(dst) == spmd::allgather(src);
  }
  spmd::testing::expect_all(ok, "redistribution through ipc");
}

TEST(Backends, IpcSparseImport) {
  if (!has_ipc()) GTEST_SKIP() << "ipc not usable here";
  const index_t nx = 13, ny = 5;
  ScopedBackend env("ipc");  // the matrix's ghost import resolves its backend from it
  const auto A = spmd::sparse::poisson2d<double>(world(), nx, ny);
  auto x = A.make_vector("test::x"), y = A.make_vector("test::y");
  bool ok = true;
  for (int k = 0; k < 3; ++k) {
    spmd::testing::fill_pattern(x, 0.5 * k);
    A.apply(x, y);
    const auto want = laplacian_ref(spmd::allgather(x), nx, ny);
    const auto got = spmd::allgather(y);
    for (std::size_t i = 0; i < want.size(); ++i)
      ok = ok && std::abs(got[i] - want[i]) <= 1e-12 * (1 + std::abs(want[i]));
  }
  spmd::testing::expect_all(ok, "SpMV with the ghost import through ipc");
}

// ---- overlap ---------------------------------------------------------------------------------------

TEST(Overlap, FrameCoversTheBoxOnce) {
  // frame_of + the interior cover every point exactly once, for boxes at every position.
  const Box<2> whole{{2, 3}, {9, 8}};
  for (index_t a = 2; a <= 9; ++a)
    for (index_t b = a; b <= 9; ++b)
      for (index_t c = 3; c <= 8; c += 2) {
        const Box<2> inner{{a, c}, {b, std::min<index_t>(c + 3, 8)}};
        std::vector<int> hits(static_cast<std::size_t>(whole.size()), 0);
        auto count = [&](const Box<2>& p) {
          for (index_t i = p.lo[0]; i < p.hi[0]; ++i)
            for (index_t j = p.lo[1]; j < p.hi[1]; ++j) ++hits[(i - 2) * 5 + (j - 3)];
        };
        if (!inner.empty()) count(inner);
        for (const auto& p : spmd::impl::frame_of(whole, inner)) count(p);
        for (const int h : hits) ASSERT_EQ(h, 1) << "inner " << inner.lo[0] << ".." << inner.hi[0];
      }
}

namespace {

/// The stencil statement of apps/stencil on a view of `g`'s interior.
auto stencil(const Array<double, 2>& g) {
  const auto in = slice(1, -1);
  return 0.2 * (g(in, in) + g(slice(0, -2), in) + g(in, slice(2, spmd::none)) + g(in, slice(0, -2)) +
                g(slice(2, spmd::none), in));
}

template <int N>
Distribution<N> grid_of(const Index<N>& shape, bool periodic) {
  return periodic ? Distribution<N>(world(), shape, spmd::halo(1), spmd::periodic())
                  : Distribution<N>(world(), shape, spmd::halo(1));
}

}  // namespace

TEST(Overlap, DoubleBufferAndInPlaceMatchThePlainStatement) {
  const auto in = slice(1, -1);
  for (const bool periodic : {false, true})
    for (const Index<2>& shape : {Index<2>{12, 10}, Index<2>{5, 17}, Index<2>{3, 3}}) {
      const auto d = grid_of<2>(shape, periodic);
      auto u = spmd::zeros<double>(d), v = spmd::zeros<double>(d);
      auto ru = spmd::zeros<double>(d), rv = spmd::zeros<double>(d);
      spmd::testing::fill_pattern(u, 1.0);
      spmd::testing::fill_pattern(ru, 1.0);
      bool ok = true;
      for (int step = 0; step < 4; ++step) {
        // double buffer: v = f(u), overlapped; the reference ends the exchange first
        auto pending = spmd::halo_begin_overlapped(u, Pattern::face);
        spmd::assign(pending, v(in, in), stencil(u));
        EXPECT_FALSE(pending.in_progress());
        spmd::exchange_halo(ru, Pattern::face);
        spmd::assign(rv(in, in), stencil(ru));
        ok = ok && same(storage_of(v), storage_of(rv));
        // in place (NumPy semantics): u = f(u) through the buffer
        auto again = spmd::halo_begin_overlapped(v, Pattern::box);
        spmd::assign(again, v(in, in), stencil(v), spmd::label("test::in_place"));
        spmd::exchange_halo(rv, Pattern::box);
        spmd::assign(rv(in, in), stencil(rv));
        ok = ok && same(storage_of(v), storage_of(rv));
        std::swap(u, v);
        std::swap(ru, rv);
      }
      spmd::testing::expect_all(ok, (d.describe() + (periodic ? " periodic" : "")).c_str());
    }
}

TEST(Overlap, PlansOfSeveralArraysEachBackendAndThreeAxes) {
  const auto in = slice(1, -1);
  const auto lo = slice(0, -2), hi = slice(2, spmd::none);
  for (const Backend b : spmd::testing::backends())
    for (const bool periodic : {false, true}) {
      const auto d = grid_of<3>(Index<3>{7, 6, 9}, periodic);
      spmd::HaloExchange<double, 3> plan(d, Pattern::face, d.halo(), b);
      auto p = spmd::zeros<double>(d), q = spmd::zeros<double>(d), out = spmd::zeros<double>(d);
      auto rp = spmd::zeros<double>(d), rq = spmd::zeros<double>(d), rout = spmd::zeros<double>(d);
      for (auto* x : {&p, &rp}) spmd::testing::fill_pattern(*x, 2.0);
      for (auto* x : {&q, &rq}) spmd::testing::fill_pattern(*x, -7.0);
      auto f = [&](const Array<double, 3>& a, const Array<double, 3>& c) {
        return a(lo, in, in) - 2.0 * c(in, in, in) + a(hi, in, in) * c(in, lo, in) + c(in, hi, in) - a(in, in, lo) +
               a(in, in, hi);
      };
      bool ok = true;
      for (int k = 0; k < 3; ++k) {
        spmd::begin_overlapped(Kokkos::DefaultExecutionSpace(), plan, p, q);
        spmd::assign(plan, out(in, in, in), f(p, q));
        EXPECT_FALSE(plan.in_progress());
        plan.exchange(rp, rq);
        spmd::assign(rout(in, in, in), f(rp, rq));
        ok = ok && same(storage_of(out), storage_of(rout));
        // the destination is the array being exchanged: buffered until the exchange has ended
        spmd::begin_overlapped(Kokkos::DefaultExecutionSpace(), plan, p, q);
        spmd::assign(plan, p(in, in, in), f(q, q) + 1.0);
        plan.exchange(rp, rq);
        spmd::assign(rp(in, in, in), f(rq, rq) + 1.0);
        ok = ok && same(storage_of(p), storage_of(rp)) && same(storage_of(q), storage_of(rq));
      }
      spmd::testing::expect_all(ok, (d.describe() + " backend " + spmd::to_string(b)).c_str());
    }
}

TEST(Overlap, StatementsThatDoNotSplit) {
  // a scalar, a stretched row, a plain copy: the exchange ends first, the result is spmd::assign's
  const auto d = grid_of<2>(Index<2>{8, 6}, false);
  auto u = spmd::zeros<double>(d), v = spmd::zeros<double>(d), r = spmd::zeros<double>(d);
  spmd::testing::fill_pattern(u, 0.0);
  auto pending = spmd::halo_begin_overlapped(u, Pattern::box);
  spmd::assign(pending, v, 3.0);
  EXPECT_FALSE(pending.in_progress());
  spmd::assign(r, 3.0);
  bool ok = same(storage_of(v), storage_of(r));
  pending = spmd::halo_begin_overlapped(u, Pattern::box);
  spmd::assign(pending, v(slice(1, -1), spmd::all), u(0, spmd::all));
  spmd::assign(r(slice(1, -1), spmd::all), u(0, spmd::all));
  ok = ok && same(storage_of(v), storage_of(r));
  pending = spmd::halo_begin_overlapped(u, Pattern::box);
  spmd::assign(pending, v, u);
  spmd::assign(r, u);
  ok = ok && same(storage_of(v), storage_of(r));
  spmd::testing::expect_all(ok, "non-splitting statements");
}
