// spmd::Redistribution, spmd::redistribute, spmd::transpose and the general impl::RegionPlan:
// every storage point of the destination is checked against a serial rule: an owned point j
// holds pattern_value(i(j)) of the source index the selection maps it to; a halo point keeps
// the sentinel.
//
//   7 x 9 from grid p x 1 (halo 1) to grid 1 x p (halo 2), at 3 ranks:
//     source rows 0..2 | 3..4 | 5..6 on ranks 0 | 1 | 2; destination columns 0..2 | 3..5 | 6..8
//     so every rank sends one box to every rank (its own box copies without a message).
#include "spmd_test.hpp"

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::impl::Selection;
using spmd::testing::fill_pattern;
using spmd::testing::pattern_value;
using spmd::testing::sentinel;
using spmd::testing::world;

namespace {

template <int N>
Distribution<N> make(const spmd::Comm& comm, const Index<N>& shape, std::vector<int> dims, int h) {
  spmd::DistributionOptions o;
  o.dims = std::move(dims);
  o.halo = {h};
  return Distribution<N>(comm, shape, o);
}

/// The source index selection `sel` maps destination index j to.
template <int N, int M>
Index<N> source_of(const Selection<N, M>& sel, const std::common_type_t<Index<M>>& j) {
  Index<N> i{};
  for (int a = 0; a < N; ++a) {
    const int k = sel.map[a];
    i[a] = sel.start[a] + (k >= 0 && k < M ? sel.step[a] * j[k] : 0);
  }
  return i;
}

/// True when every storage point of dst on this rank holds what it must (dst may be null).
template <int N, int M>
bool check(const Array<double, M>& dst, const Selection<N, M>& sel, double shift = 0.0) {
  if (dst.is_null()) return true;
  const auto& d = dst.distribution();
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dst.local_with_halo());
  const spmd::Box<M> storage = spmd::testing::storage_box(d);
  bool ok = true;
  index_t p = 0;
  spmd::for_each_index(storage, [&](const Index<M>& j) {
    const double want = d.owned().contains(j) ? pattern_value<N>(source_of(sel, j)) + shift : sentinel;
    const double got = host.data()[p++];
    if (got != want && ok) {
      ADD_FAILURE() << "rank " << world().rank() << " at " << spmd::impl::shape_str(j) << ": got " << got << ", want "
                    << want;
      ok = false;
    }
  });
  return ok;
}

template <int N>
Selection<N, N> identity() {
  return Selection<N, N>::identity();
}

/// Redistribute a pattern from (dims_a, halo ha) to (dims_b, halo hb) and check.
template <int N>
void round_trip(const Index<N>& shape, std::vector<int> dims_a, int ha, std::vector<int> dims_b, int hb) {
  const auto from = make<N>(world(), shape, std::move(dims_a), ha);
  const auto to = make<N>(world(), shape, std::move(dims_b), hb);
  Array<double, N> a(from, spmd::label("a")), b(to, spmd::label("b"));
  fill_pattern(a);
  b.fill_with_halo(sentinel);
  spmd::redistribute(b, a);
  spmd::testing::expect_all(check(b, identity<N>()), "redistribute");
}

/// Apply a selection from `from` into a fresh array on `to` and check; then again with the
/// device form of the copy kernels (one launch over all boxes), which CPU builds otherwise skip.
template <int N, int M>
void select(const Distribution<N>& from, const Selection<N, M>& sel, const Distribution<M>& to) {
  Array<double, N> a(from, spmd::label("a"));
  Array<double, M> b(to, spmd::label("b"));
  fill_pattern(a);
  spmd::impl::RegionPlan<double, N, M, spmd::DefaultMemorySpace> plan(from, sel, to);
  for (bool flat : {false, true}) {
    b.fill_with_halo(sentinel);
    spmd::testing::KnobsGuard guard;
    spmd::testing::knobs().flat_copies = flat;
    plan.apply(b, a);
    spmd::testing::expect_all(check(b, sel), flat ? "selection (flat kernels)" : "selection");
  }
}

}  // namespace

TEST(Redistribute, OneDimensional) {
  round_trip<1>({23}, {0}, 1, {0}, 0);
  round_trip<1>({2}, {0}, 0, {0}, 0);  // n < p at 3-4 ranks: ranks own nothing
}

TEST(Redistribute, TwoDimensionalGrids) {
  const int p = world().size();
  round_trip<2>({7, 9}, {p, 1}, 1, {1, p}, 2);
  round_trip<2>({3, 2}, {1, p}, 0, {p, 1}, 0);  // blocks empty on some ranks (no halo then)
}

TEST(Redistribute, ThreeDimensional) {
  const int p = world().size();
  round_trip<3>({5, 3, 4}, {0, 0, 0}, 1, {1, 1, p}, 0);
}

TEST(Redistribute, PlanReusedAndHalosUntouched) {
  const int p = world().size();
  const auto from = make<2>(world(), {6, 9}, {p, 1}, 1);
  const auto to = make<2>(world(), {6, 9}, {1, p}, 2);
  spmd::Redistribution<double, 2> plan(to, from);
  Array<double, 2> a(from, spmd::label("a")), b(to, spmd::label("b"));
  b.fill_with_halo(sentinel);
  for (int it = 0; it < 2; ++it) {
    fill_pattern(a, 100.0 * it);
    plan.apply(b, a);
    spmd::testing::expect_all(check(b, identity<2>(), 100.0 * it), "reused plan");
  }
  EXPECT_LE(plan.num_sends(), p - 1);
}

TEST(Redistribute, StepsAndNegativeSteps) {
  const int p = world().size();
  // dst(j0, j1) = src(8 - 2 j0, 1 + 3 j1): src 9 x 7, dst 5 x 2
  Selection<2, 2> sel;
  sel.start = {8, 1};
  sel.step = {-2, 3};
  sel.map = {0, 1};
  select<2, 2>(make<2>(world(), {9, 7}, {p, 1}, 1), sel, make<2>(world(), {5, 2}, {0, 0}, 1));
  // 1-D reversal with step -3: src 10, dst 4 (on one rank, a halo of 2)
  Selection<1, 1> rev;
  rev.start = {9};
  rev.step = {-3};
  rev.map = {0};
  select<1, 1>(make<1>(world(), {10}, {0}, 0), rev, make<1>(world(), {4}, {0}, p == 1 ? 2 : 1));
}

TEST(Redistribute, DroppedAxes) {
  const int p = world().size();
  // dst(j0, j1) = src(3 - j0, 2, 5 - 2 j1): src 4 x 5 x 6 -> dst 4 x 3
  Selection<3, 2> sel;
  sel.start = {3, 2, 5};
  sel.step = {-1, 1, -2};
  sel.map = {0, -1, 1};
  select<3, 2>(make<3>(world(), {4, 5, 6}, {1, p, 1}, 1), sel, make<2>(world(), {4, 3}, {0, 0}, 0));
  // a column: dst(j) = src(j, 4), and permuted + dropped: dst(j0, j1) = src(j1, 1, j0)
  Selection<2, 1> col;
  col.start = {0, 4};
  col.step = {1, 1};
  col.map = {0, -1};
  select<2, 1>(make<2>(world(), {7, 5}, {0, 0}, 0), col, make<1>(world(), {7}, {0}, 1));
  Selection<3, 2> perm;
  perm.start = {0, 1, 0};
  perm.step = {1, 1, 1};
  perm.map = {1, -1, 0};
  select<3, 2>(make<3>(world(), {3, 2, 5}, {0, 0, 0}, 0), perm, make<2>(world(), {5, 3}, {p, 1}, 0));
}

TEST(Redistribute, InPlaceReversal) {
  // dst and src are the same array: a[:] = a[::-1] (own part through a buffer)
  auto a = spmd::empty<double>(make<1>(world(), {11}, {0}, 1));
  fill_pattern(a);
  Selection<1, 1> rev;
  rev.start = {10};
  rev.step = {-1};
  rev.map = {0};
  spmd::impl::RegionPlan<double, 1, 1, spmd::DefaultMemorySpace>(a.distribution(), rev, a.distribution())
      .apply(a, a);  // dst, src
  spmd::testing::expect_all(check(a, rev), "in-place reversal");
}

TEST(Redistribute, Transpose) {
  auto a = spmd::empty<double>(make<2>(world(), {5, 3}, {0, 0}, 1));
  fill_pattern(a);
  const auto t = spmd::transpose(a);
  ASSERT_EQ(t.shape(), (Index<2>{3, 5}));
  EXPECT_EQ(t.halo(), (std::array<int, 2>{1, 1}));
  // t(j0, j1) = a(j1, j0); halo of the new array is zero, not the sentinel
  std::vector<double> want = spmd::testing::host_array<2>(Index<2>{3, 5}, [](const Index<2>& j) {
    return pattern_value<2>(Index<2>{j[1], j[0]});
  });
  EXPECT_EQ(spmd::allgather(t), want);
  auto tt = spmd::transpose(t);
  EXPECT_EQ(spmd::allgather(tt), spmd::allgather(a));
}

TEST(Redistribute, SubCommunicatorTarget) {
  // Destination on the even ranks only; odd ranks pass a null distribution and array.
  const int p = world().size();
  const int color = world().rank() % 2;
  const spmd::Comm sub = world().split(color, world().rank());
  const auto from = make<2>(world(), {7, 4}, {p, 1}, 1);
  const auto on_sub = make<2>(sub, {7, 4}, {0, 0}, 1);  // both halves build one (collective on sub)
  const Distribution<2> to = color == 0 ? on_sub : Distribution<2>();
  Array<double, 2> a(from, spmd::label("a")), b;
  if (color == 0) {
    b = Array<double, 2>(to, spmd::label("b"));
    b.fill_with_halo(sentinel);
  }
  fill_pattern(a);
  spmd::redistribute(b, a);
  spmd::testing::expect_all(check(b, identity<2>()), "to sub-communicator");
  // and back: source on the sub-communicator, transfer over the world
  Array<double, 2> c(from, spmd::label("c"));
  c.fill_with_halo(sentinel);
  if (color == 0) fill_pattern(b, 7.0);
  spmd::Redistribution<double, 2>(world(), from, to).apply(c, b);
  spmd::testing::expect_all(check(c, identity<2>(), 7.0), "from sub-communicator");
}

TEST(Redistribute, ShapeMismatchIsAnError) {
  auto a = spmd::zeros<double>(world(), {7, 5});
  auto b = spmd::zeros<double>(world(), {5, 7});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::redistribute(b, a),
                               "spmd::Redistribution: source shape {7, 5} and destination shape {5, 7}");
  Selection<2, 2> bad;
  bad.start = {0, 0};
  bad.step = {1, 0};
  bad.map = {0, 1};
  SPMD_EXPECT_COLLECTIVE_ERROR(
      (spmd::impl::RegionPlan<double, 2, 2, spmd::DefaultMemorySpace>(a.distribution(), bad, b.distribution())),
      "step 0");
}
