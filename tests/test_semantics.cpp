// One meaning per name (issue 30): each trap of the Array / view surface either does what
// docs/api/array.md's semantics table says, checked here against a serial reference, or does not
// compile (checked with static_assert, so this file failing to build is the test failing).
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd_test.hpp"

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::slice;
using spmd::testing::world;

namespace {

using A1 = Array<double, 1>;
using A2 = Array<double, 2>;
using View2 = decltype(std::declval<const A2&>()(spmd::all, spmd::all));
using Expr1 = decltype(std::declval<const A1&>() + std::declval<const A1&>());

// ---- compile-time rules --------------------------------------------------------------------------
// Trap 1: an expression never converts to an Array implicitly (no hidden allocation and collective
// when passed to a `const Array&` parameter); explicit construction still works.
static_assert(!std::is_convertible_v<Expr1, A1>, "Array(expression) must be explicit");
static_assert(std::is_constructible_v<A1, Expr1>, "Array(expression) must exist");
static_assert(!std::is_convertible_v<View2, A2>, "Array(view) must be explicit");
// Trap 3: a view is copied as a handle but never assigned from a view of its own type, so
// std::swap, std::vector and the standard algorithms cannot write elements through it.
static_assert(std::is_copy_constructible_v<View2>, "views are handles");
static_assert(!std::is_copy_assignable_v<View2>, "view = view must not compile");
static_assert(!std::is_move_assignable_v<View2>, "view = view (an rvalue) must not compile");
static_assert(!std::is_swappable_v<View2>, "std::swap of two views must not compile");
static_assert(std::is_swappable_v<A2>, "Arrays swap (moves)");
// Trap 6: there is no two-Array spmd::copy (copy into is spmd::copyto, destination first).
template <class X, class = void>
struct has_copy2 : std::false_type {};
template <class X>
struct has_copy2<X, std::void_t<decltype(spmd::copy(std::declval<const X&>(), std::declval<const X&>()))>>
    : std::true_type {};
static_assert(!has_copy2<A1>::value, "spmd::copy(dst, src) is spmd::copyto(dst, src)");
// Trap 10: owned_access() returns a public type.
static_assert(std::is_same_v<decltype(std::declval<const A2&>().owned_access()), spmd::OwnedAccess<A2::view_type, 2>>,
              "owned_access returns spmd::OwnedAccess");

/// This rank's storage (owned block and halo) on the host, with the global index of element 0.
template <class T>
std::vector<T> storage(const Array<T, 1>& a) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  return std::vector<T>(h.data(), h.data() + h.extent(0));
}

/// Global index i of a's storage element k (halo included).
index_t global_of(const A1& a, std::size_t k) {
  return a.owned().lo[0] - a.halo()[0] + index_t(k);
}

}  // namespace

// Trap 1: the explicit form makes the same array the implicit one used to.
TEST(Semantics, ExplicitArrayFromExpression) {
  const index_t n = 11;
  auto a = spmd::arange<double>(world(), n);
  auto b = spmd::full<double>(world(), {n}, 0.5);
  A1 r(a - 2.0 * b);
  auto c = spmd::copy(a - 2.0 * b);
  std::vector<double> ref(n);
  for (index_t i = 0; i < n; ++i) ref[std::size_t(i)] = double(i) - 1.0;
  EXPECT_EQ(spmd::allgather(r), ref);
  EXPECT_EQ(spmd::allgather(c), ref);
  EXPECT_TRUE(r.distribution() == a.distribution());
}

// Trap 2: `b = a`, `b = a(all)` and spmd::assign(b, a) are one operation: b keeps its
// distribution and storage (views of b see the values); only a null b becomes a copy of a.
TEST(Semantics, AssignmentKeepsTheDestinationsLayout) {
  const int p = world().size();
  const index_t n = 4 * p + 3;
  Distribution<2> da(world(), {n, 5}, spmd::grid({p, 1}));
  Distribution<2> db(world(), {n, 5}, spmd::grid({1, p}), spmd::halo(1));
  const auto ref = spmd::testing::host_array<2>(da.shape(), [](const Index<2>& g) { return 3.0 * g[0] - g[1]; });
  A2 a(da, spmd::label("a"));
  spmd::scatter(a, world().rank() == 0 ? ref : std::vector<double>{});
  for (int form = 0; form < 3; ++form) {
    A2 b(db, spmd::label("b"));
    b.fill_with_halo(-1.0);
    const auto* before = b.local_with_halo().data();
    auto view = b(slice(1, -1));
    if (form == 0) b = a;
    if (form == 1) b = a(spmd::all);
    if (form == 2) spmd::assign(b, a);
    const std::string what = "form " + std::to_string(form);
    EXPECT_TRUE(b.distribution() == db) << what;
    EXPECT_EQ(b.local_with_halo().data(), before) << what;
    EXPECT_EQ(b.label(), "b") << what;
    EXPECT_EQ(spmd::allgather(b), ref) << what;
    EXPECT_EQ(spmd::sum(view), spmd::sum(a(slice(1, -1)))) << what;
    // The halo is not written by an assignment.
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b.local_with_halo());
    EXPECT_EQ(h(0, 0), -1.0) << what;
  }
  A2 fresh;
  fresh = a;  // a null destination becomes a copy
  EXPECT_TRUE(fresh.distribution() == da);
  EXPECT_NE(fresh.local_with_halo().data(), a.local_with_halo().data());
  EXPECT_EQ(spmd::allgather(fresh), ref);
  // A moved-in array hands its storage over (C++ move).
  A2 c(db, spmd::label("c"));
  c = A2(a);
  EXPECT_TRUE(c.distribution() == da);
}

// Trap 3: views are handles; elements are copied with spmd::assign.
TEST(Semantics, ViewsAreHandlesAssignWrites) {
  const index_t n = 13;
  auto a = spmd::arange<double>(world(), n);
  auto b = spmd::zeros<double>(world(), {n});
  auto va = a(slice(0, 6));
  auto vb = b(slice(7, 13));
  auto vb2 = vb;  // a second handle: no element written
  EXPECT_EQ(spmd::sum(b), 0.0);
  spmd::assign(vb2, va);  // b[7:13] = a[0:6]
  std::vector<double> ref(n, 0.0);
  for (index_t i = 7; i < 13; ++i) ref[std::size_t(i)] = double(i - 7);
  EXPECT_EQ(spmd::allgather(b), ref);
  EXPECT_EQ(spmd::sum(vb), 15.0);
  // Overlapping views of one array: NumPy's a[1:13] = a[0:12].
  spmd::assign(a(slice(1, n)), a(slice(0, n - 1)));
  std::vector<double> shifted(n);
  for (index_t i = 0; i < n; ++i) shifted[std::size_t(i)] = double(i == 0 ? 0 : i - 1);
  EXPECT_EQ(spmd::allgather(a), shifted);
}

// Trap 4: views hold the storage, not the name: after spmd::swap(u, next) a view made from u
// reads and writes what is now next.
TEST(Semantics, ViewsFollowTheStorageAcrossSwap) {
  const index_t n = 10;
  auto u = spmd::full<double>(world(), {n}, 1.0, spmd::halo(1));
  auto next = spmd::full<double>(world(), {n}, 2.0, spmd::halo(1));
  auto inner = u(slice(1, -1));
  spmd::swap(u, next);
  EXPECT_EQ(spmd::sum(inner), 1.0 * double(n - 2));  // the old u, now named next
  inner = 5.0;
  EXPECT_EQ(spmd::allgather(u), std::vector<double>(n, 2.0));
  std::vector<double> ref(n, 5.0);
  ref.front() = ref.back() = 1.0;
  EXPECT_EQ(spmd::allgather(next), ref);
  std::swap(u, next);  // std::swap moves too: the same rule
  EXPECT_EQ(spmd::sum(inner), spmd::sum(u(slice(1, -1))));
}

// Trap 5: get and set are both Collective (agreed errors); get_local / set_local are Local and
// reach owned elements only.
TEST(Semantics, GetSetCollectiveLocalAccessorsLocal) {
  const index_t n = 9;
  auto a = spmd::zeros<double>(world(), {n, 3});
  a.set({4, 2}, 7.5);  // every rank calls it; the owner writes
  EXPECT_EQ(a.get(4, 2), 7.5);
  SPMD_EXPECT_COLLECTIVE_ERROR(a.set({n, 0}, 1.0), "spmd::Array::set: global index {9, 0} is out of range");
  if (world().size() > 1)
    SPMD_EXPECT_COLLECTIVE_ERROR(a.set({world().rank() == 0 ? 1 : 2, 0}, 1.0), "different global indices");
  // Local accessors: each rank writes its own first row, no communication.
  const auto& o = a.owned();
  if (!o.empty()) {
    a.set_local({o.lo[0], 0}, 100.0 + double(o.lo[0]));
    EXPECT_EQ(a.get_local({o.lo[0], 0}), 100.0 + double(o.lo[0]));
  }
  const Index<2> foreign{o.empty() || o.lo[0] > 0 ? 0 : n - 1, 0};
  if (!o.contains(foreign)) {
    try {
      (void)a.get_local(foreign);
      ADD_FAILURE() << "get_local of an element this rank does not own did not throw";
    } catch (const spmd::Error& e) {
      EXPECT_FALSE(e.collective());
      EXPECT_NE(std::string(e.what()).find("spmd::Array::get_local: global index"), std::string::npos) << e.what();
    }
  }
  const auto got = spmd::allgather(a);
  std::vector<double> ref(std::size_t(n * 3), 0.0);
  ref[4 * 3 + 2] = 7.5;
  for (int r = 0; r < world().size(); ++r) {
    const auto box = a.distribution().owned_by(r);
    if (!box.empty()) ref[std::size_t(box.lo[0] * 3)] = 100.0 + double(box.lo[0]);
  }
  EXPECT_EQ(got, ref);
}

// Trap 6: copyto writes into an existing array (destination first); copy makes a new one.
TEST(Semantics, CopyFamily) {
  const index_t n = 12;
  auto a = spmd::arange<double>(world(), n, spmd::halo(1));
  auto dst = spmd::zeros<double>(world(), {n}, spmd::halo(2));
  spmd::copyto(dst, a);
  std::vector<double> ref(n);
  for (index_t i = 0; i < n; ++i) ref[std::size_t(i)] = double(i);
  EXPECT_EQ(spmd::allgather(dst), ref);
  auto b = spmd::copy(a);
  const typename A1::execution_space exec;
  auto c = spmd::copy(exec, a);
  exec.fence();
  auto d = spmd::copy(a(slice(2, 8)), spmd::label("d"));
  for (const auto* x : {&b, &c}) {
    EXPECT_TRUE(x->distribution() == a.distribution());
    EXPECT_NE(x->local_with_halo().data(), a.local_with_halo().data());
    EXPECT_EQ(spmd::allgather(*x), ref);
  }
  EXPECT_EQ(d.label(), "d");
  EXPECT_EQ(spmd::allgather(d), std::vector<double>(ref.begin() + 2, ref.begin() + 8));
}

// Trap 7: fill and `a = v` write the same elements (the owned ones); fill_with_halo the storage.
TEST(Semantics, FillAndScalarAssignmentAgree) {
  const index_t n = 10;
  auto a = spmd::zeros<double>(world(), {n}, spmd::halo(2));
  auto b = spmd::zeros<double>(world(), {n}, spmd::halo(2));
  a.fill_with_halo(-1.0);
  b.fill_with_halo(-1.0);
  a.fill(3.0);
  b = 3.0;
  EXPECT_EQ(storage(a), storage(b));
  const auto s = storage(a);
  for (std::size_t k = 0; k < s.size(); ++k)
    EXPECT_EQ(s[k], a.owned().contains(Index<1>{global_of(a, k)}) ? 3.0 : -1.0) << k;
  spmd::fill(b, 4.0);
  EXPECT_EQ(spmd::allgather(b), std::vector<double>(n, 4.0));
  b.fill_with_halo(6.0);
  for (double v : storage(b)) EXPECT_EQ(v, 6.0);
}

// Trap 8: a copy made right after an asynchronous write sees the written values (the copy
// constructor waits for earlier work; spmd::copy(exec, a) is ordered on exec).
TEST(Semantics, CopyAfterAsynchronousWrite) {
  const index_t n = 1 << 16;
  auto a = spmd::zeros<double>(world(), {n});
  const typename A1::execution_space exec;
  for (int round = 1; round <= 3; ++round) {
    spmd::assign(exec, a, a + 1.0);  // asynchronous on exec
    const A1 b = a;                  // no fence by the caller
    EXPECT_EQ(spmd::sum(b), double(round) * double(n));
    auto c = spmd::copy(exec, a);
    exec.fence();
    EXPECT_EQ(spmd::sum(c), double(round) * double(n));
  }
}

// Trap 9: copies are counted at run time (the profiling region spmd::Array::copy), with no
// per-translation-unit macro.
TEST(Semantics, CopiesAreCountedAtRunTime) {
  namespace prof = spmd::impl::profiling;
  auto a = spmd::ones<double>(world(), {8});
  const bool was = prof::recording;
  prof::set_recording(true);
  prof::reset();
  A1 b = a;
  auto c = spmd::copy(a);
  b = a;  // an assignment into existing storage: not a copy
  prof::set_recording(was);
  long long copies = 0;
  for (const auto& r : prof::local_stats())
    if (r.name == "spmd::Array::copy") copies = r.count;
  EXPECT_EQ(copies, 2);
  EXPECT_EQ(spmd::sum(b) + spmd::sum(c), 16.0);
}
