// spmd::slice / spmd::ArrayView against a serial reference of NumPy's rules (numpy_ref.hpp, an
// independent implementation: explicit index lists, CPython's slice clamping).
//
// Views are checked two ways: locally (the view's shape and the parent index each of its
// elements maps to, no communication, so hundreds of slices are cheap at 4 ranks) and by value
// (assignment through the view, then the whole parent gathered and compared with the reference
// array after the same NumPy assignment; every rank's halo must still hold the sentinel).
//
//   9 x 7 array at 3 ranks (automatic grid 3 x 1): rows 0..2 | 3..5 | 6..8, so slices with
//   steps and negative steps cut the blocks unevenly; at 4 ranks 2 x 2.
#include "numpy_ref.hpp"
#include "spmd_test.hpp"

using ref::Arg;
using spmd::Array;
using spmd::Index;
using spmd::index_t;
using spmd::none;
using spmd::slice;
using spmd::testing::fill_pattern;
using spmd::testing::pattern_value;
using spmd::testing::sentinel;
using spmd::testing::world;

namespace {

/// The reference array matching fill_pattern.
template <int N>
ref::Array ref_pattern(const Index<N>& shape) {
  ref::Array r(std::vector<index_t>(shape.begin(), shape.end()));
  std::size_t p = 0;
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, shape}, [&](const Index<N>& g) { r.v[p++] = pattern_value<N>(g); });
  return r;
}

/// The library view maps its elements to the parent indices the reference view lists. Local.
template <class View>
::testing::AssertionResult same_mapping(const View& v, const ref::View& r) {
  const auto& sel = v.selection();
  const auto shape = r.shape();
  if (shape.size() != static_cast<std::size_t>(View::rank))
    return ::testing::AssertionFailure() << "rank " << View::rank << " vs reference " << shape.size();
  for (int k = 0; k < View::rank; ++k)
    if (v.shape()[k] != shape[static_cast<std::size_t>(k)])
      return ::testing::AssertionFailure() << "shape " << spmd::impl::shape_str(v.shape()) << " axis " << k
                                           << " vs reference " << shape[static_cast<std::size_t>(k)];
  int next = 0;
  for (std::size_t a = 0; a < r.lists.size(); ++a) {
    const int k = sel.map[a];
    if (!r.kept[a]) {
      if (k != -1 || sel.start[a] != r.lists[a][0])
        return ::testing::AssertionFailure() << "axis " << a << " should be dropped at " << r.lists[a][0];
      continue;
    }
    if (k != next++) return ::testing::AssertionFailure() << "axis " << a << " maps to " << k;
    for (std::size_t j = 0; j < r.lists[a].size(); ++j)
      if (sel.start[a] + sel.step[a] * static_cast<index_t>(j) != r.lists[a][j])
        return ::testing::AssertionFailure()
               << "axis " << a << " element " << j << ": " << sel.start[a] + sel.step[a] * static_cast<index_t>(j)
               << " vs reference " << r.lists[a][j] << " (" << v.describe() << ")";
  }
  return ::testing::AssertionSuccess();
}

/// The whole array gathered equals the reference, and every halo point still holds the sentinel.
template <int N>
bool equals_reference(const Array<double, N>& a, const ref::Array& r) {
  bool ok = spmd::allgather(a) == r.v;
  EXPECT_TRUE(ok) << "values differ from the reference";
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  const auto storage = spmd::testing::storage_box(a.distribution());
  index_t p = 0;
  bool halo_ok = true;
  spmd::for_each_index(storage, [&](const Index<N>& g) {
    const double got = host.data()[p++];
    if (!a.owned().contains(g) && got != sentinel) halo_ok = false;
  });
  EXPECT_TRUE(halo_ok) << "rank " << world().rank() << ": a halo point was written";
  return ok && halo_ok;
}

/// NumPy: v[...] = -v (through a copy of v: an Array of the view's shape that the assignment must
/// move back into v's layout), in the library and the reference; then compare the whole arrays.
template <class View, int N>
void write_through(View v, const ref::View& r, const Array<double, N>& a, ref::Array& ra) {
  const auto values = ref::map(r.get(), [](double x) { return -x; });
  r.set(values);
  auto neg = spmd::copy(v);  // an Array of the view's shape holding its elements
  v = -neg;                  // written back negated: through the view, never into halos
  spmd::testing::expect_all(equals_reference(a, ra), "write through a view");
}

}  // namespace

TEST(Slice, NormalisationMatchesPython) {
  // Every combination of start, stop (None, negative, clamped, in range) and step on 1-D axes of
  // length 7 and 0: shapes and element positions agree with CPython's slice.indices. Local.
  for (index_t n : {7, 0}) {
    auto a = spmd::zeros<double>(world(), {n});
    ref::Array ra({n});
    const auto whole = ref::View::whole(ra);
    const std::vector<std::optional<index_t>> ends = {std::nullopt, -9, -7, -3, -1, 0, 2, 6, 7, 9};
    for (auto start : ends)
      for (auto stop : ends)
        for (index_t step : {1, 2, 3, -1, -2, -4}) {
          const ref::View r = whole({Arg::sl(start, stop, step)});
          const spmd::Slice s = start && stop ? slice(*start, *stop, step)
                                : start       ? slice(*start, none, step)
                                : stop        ? slice(none, *stop, step)
                                              : slice(none, none, step);
          EXPECT_TRUE(same_mapping(a(s), r)) << "n " << n << " slice " << (start ? std::to_string(*start) : "None")
                                             << ":" << (stop ? std::to_string(*stop) : "None") << ":" << step;
        }
  }
}

TEST(Slice, FactoriesAndIntegerIndices) {
  auto a = spmd::zeros<double>(world(), {9, 7});
  ref::Array ra({9, 7});
  const auto w = ref::View::whole(ra);
  EXPECT_TRUE(same_mapping(a(slice(1, -1), slice(1, -1)), w({Arg::sl(1, -1), Arg::sl(1, -1)})));
  EXPECT_TRUE(same_mapping(a(slice(none, none, -1)), w({Arg::sl(std::nullopt, std::nullopt, -1)})));
  EXPECT_TRUE(same_mapping(a(slice(5, none, -2), spmd::all), w({Arg::sl(5, std::nullopt, -2), Arg::all()})));
  EXPECT_TRUE(same_mapping(a(slice(none, 4), slice(2, none)), w({Arg::sl(std::nullopt, 4), Arg::sl(2, std::nullopt)})));
  EXPECT_TRUE(same_mapping(a(spmd::all, 0), w({Arg::all(), Arg::at(0)})));
  EXPECT_TRUE(same_mapping(a(-1), w({Arg::at(-1)})));  // fewer arguments: the rest are ':'
  EXPECT_TRUE(same_mapping(a(3, slice(none, none, 3)), w({Arg::at(3), Arg::sl(std::nullopt, std::nullopt, 3)})));
  EXPECT_TRUE(same_mapping(a(slice(20, 30)), w({Arg::sl(20, 30)})));  // clamped: empty
  EXPECT_EQ(a(slice(20, 30)).shape(), (Index<2>{0, 7}));
  EXPECT_EQ(a(slice(3, 1)).size(), 0);
  static_assert(decltype(a(spmd::all, 0))::rank == 1, "an integer index drops its axis");
  static_assert(decltype(a(0))::rank == 1, "an integer index drops its axis");
  static_assert(decltype(a(spmd::all))::rank == 2, "omitted axes are kept");
}

TEST(Slice, ViewsOfViewsCompose) {
  auto a = spmd::zeros<double>(world(), {10, 9, 8});
  ref::Array ra({10, 9, 8});
  const auto w = ref::View::whole(ra);
  const auto v1 = a(slice(1, none, 2), slice(none, none, -1), 3);  // 5 x 9
  const auto r1 = w({Arg::sl(1, std::nullopt, 2), Arg::sl(std::nullopt, std::nullopt, -1), Arg::at(3)});
  ASSERT_TRUE(same_mapping(v1, r1));
  EXPECT_TRUE(same_mapping(v1(slice(none, none, -2), slice(2, -1, 3)),
                           r1({Arg::sl(std::nullopt, std::nullopt, -2), Arg::sl(2, -1, 3)})));
  EXPECT_TRUE(same_mapping(v1(-2), r1({Arg::at(-2)})));
  EXPECT_TRUE(same_mapping(v1(spmd::all, -1), r1({Arg::all(), Arg::at(-1)})));
  EXPECT_TRUE(same_mapping(v1(slice(-100, 100, -1)), r1({Arg::sl(-100, 100, -1)})));  // empty
  const auto v2 = v1(slice(4, 0, -1), slice(1, 8, 2))(slice(none, none, -1), 1);
  const auto r2 = r1({Arg::sl(4, 0, -1), Arg::sl(1, 8, 2)})({Arg::sl(std::nullopt, std::nullopt, -1), Arg::at(1)});
  EXPECT_TRUE(same_mapping(v2, r2));
}

TEST(Slice, AssignmentWritesThroughAndNeverHalos) {
  const spmd::Distribution<2> d(world(), {9, 7}, spmd::halo(1));
  Array<double, 2> a(d, spmd::label("a"));
  fill_pattern(a);
  ref::Array ra = ref_pattern<2>({9, 7});
  const auto w = ref::View::whole(ra);
  // scalars: a[:, 0] = -273.15; a[0, :] = 40.0; a[1:-1:3, ::-2] = 7
  a(spmd::all, 0) = -273.15;
  w({Arg::all(), Arg::at(0)}).set(std::vector<double>(9, -273.15));
  a(0, spmd::all) = 40.0;
  w({Arg::at(0), Arg::all()}).set(std::vector<double>(7, 40.0));
  a(slice(1, -1, 3), slice(none, none, -2)) = 7;
  const auto r = w({Arg::sl(1, -1, 3), Arg::sl(std::nullopt, std::nullopt, -2)});
  r.set(std::vector<double>(static_cast<std::size_t>(r.count()), 7.0));
  spmd::testing::expect_all(equals_reference(a, ra), "scalar assignment through views");
  // arrays of the view's shape, written through views with steps, negative steps, dropped axes
  write_through(a(slice(7, 0, -3), slice(1, none, 2)), w({Arg::sl(7, 0, -3), Arg::sl(1, std::nullopt, 2)}), a, ra);
  write_through(a(-2), w({Arg::at(-2)}), a, ra);
  write_through(a(slice(2, 8), slice(1, -1))(slice(none, none, -1), 3),
                w({Arg::sl(2, 8), Arg::sl(1, -1)})({Arg::sl(std::nullopt, std::nullopt, -1), Arg::at(3)}), a, ra);
  write_through(a(slice(4, 4)), w({Arg::sl(4, 4)}), a, ra);  // empty: nothing changes
}

TEST(Slice, CopyMakesANewArray) {
  const int p = world().size();
  const spmd::Distribution<3> d(world(), {6, 5, 4}, spmd::halo(1), spmd::grid({1, p, 1}));
  Array<double, 3> a(d, spmd::label("a"));
  fill_pattern(a);
  ref::Array ra = ref_pattern<3>({6, 5, 4});
  const auto w = ref::View::whole(ra);
  const auto c = spmd::copy(a(slice(none, none, -2), 1, slice(1, 3)));
  static_assert(std::is_same_v<std::decay_t<decltype(c)>, Array<double, 2>>, "copy of a 2-d view is a 2-d Array");
  EXPECT_EQ(c.shape(), (Index<2>{3, 2}));
  EXPECT_EQ(spmd::allgather(c), (w({Arg::sl(std::nullopt, std::nullopt, -2), Arg::at(1), Arg::sl(1, 3)}).get()));
  // the copy owns its storage: writing it leaves the parent alone
  c(spmd::all) = 0.0;
  spmd::testing::expect_all(equals_reference(a, ra), "parent unchanged by writes to a copy");
  // with options: a halo and a process grid of the caller's choice
  const auto h =
      spmd::copy(a(spmd::all, slice(none, none, -1)), spmd::halo(1), spmd::grid({p, 1, 1}), spmd::label("h"));
  EXPECT_EQ(h.halo(), (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(h.distribution().dims(), (std::array<int, 3>{p, 1, 1}));
  EXPECT_EQ(spmd::allgather(h), (w({Arg::all(), Arg::sl(std::nullopt, std::nullopt, -1)}).get()));
}

TEST(Slice, OneAndFourDimensions) {
  auto a = spmd::empty<double>(spmd::Distribution<1>(world(), {13}, spmd::halo(1)));
  fill_pattern(a);
  ref::Array ra = ref_pattern<1>({13});
  const auto w = ref::View::whole(ra);
  write_through(a(slice(11, 1, -4)), w({Arg::sl(11, 1, -4)}), a, ra);
  a(slice(none, none, 5)) = 1.5;
  w({Arg::sl(std::nullopt, std::nullopt, 5)}).set({1.5, 1.5, 1.5});
  spmd::testing::expect_all(equals_reference(a, ra), "1-d");

  auto b = spmd::empty<double>(spmd::Distribution<4>(world(), {3, 4, 2, 5}, spmd::halo(1)));
  fill_pattern(b);
  ref::Array rb = ref_pattern<4>({3, 4, 2, 5});
  const auto wb = ref::View::whole(rb);
  write_through(b(slice(none, none, -1), 2, spmd::all, slice(1, none, 3)),
                wb({Arg::sl(std::nullopt, std::nullopt, -1), Arg::at(2), Arg::all(), Arg::sl(1, std::nullopt, 3)}), b,
                rb);
}

TEST(Slice, BadArgumentsAreCollectiveErrors) {
  auto a = spmd::zeros<double>(world(), {9, 7});
  SPMD_EXPECT_COLLECTIVE_ERROR(a(slice(1, 5, 0)), "slice step 0 on axis 0 of shape {9, 7}");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(spmd::all, slice(none, none, 0)), "slice step 0 on axis 1");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(9), "index 9 is out of range for axis 0 with size 9 (shape {9, 7})");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(spmd::all, -8), "index -8 is out of range for axis 1 with size 7");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(slice(1, 3))(spmd::all, 7), "spmd::ArrayView::operator(): index 7 is out of range");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(slice(1, 3))(2), "index 2 is out of range for axis 0 with size 2 (shape {2, 7})");
}
