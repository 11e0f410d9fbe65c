#pragma once
// The Python binding's type-erased array: one Holder class for every element type (float64,
// float32, int64, int32, bool) and rank (1-3). A Holder names a parent spmd::Array<T, P> and a
// selection of it (an spmd::ArrayView<T, M, P> described by values), so slices, integer indices
// and whole arrays are one Python type. Everything that needs the static types goes through
// dispatch() here, instantiated in the translation units that need it (create.cpp for the
// parent-level operations, eval_<type>.cpp for the fused expressions).

#include <spmd/array.hpp>
#include <spmd/comm.hpp>
#include <spmd/distribution.hpp>
#include <spmd/error.hpp>
#include <spmd/slice.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace spmd::py {

/// The element types of the binding, in NumPy's names.
enum class DType : int { f64 = 0, f32 = 1, i64 = 2, i32 = 3, b = 4 };
const char* dtype_name(DType d);

template <DType D>
struct dtype_traits;
template <>
struct dtype_traits<DType::f64> {
  using type = double;
};
template <>
struct dtype_traits<DType::f32> {
  using type = float;
};
template <>
struct dtype_traits<DType::i64> {
  using type = std::int64_t;
};
template <>
struct dtype_traits<DType::i32> {
  using type = std::int32_t;
};
template <>
struct dtype_traits<DType::b> {
  using type = bool;
};
template <DType D>
using type_of = typename dtype_traits<D>::type;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::i32;
  else
    return DType::b;
}

/// A parent array, type-erased. `halo_stale`: the halo may differ from the neighbours' values
/// (set by every write, cleared by an exchange); replicated, since every write is collective.
struct ParentBase {
  DType dtype;
  int rank;
  bool halo_stale = true;
  ParentBase(DType d, int r) : dtype(d), rank(r) {}
  virtual ~ParentBase();
  virtual void release() = 0;  // drop the storage (at interpreter exit, before Kokkos ends)
  virtual bool has_halo() const = 0;
};
template <class T, int P>
struct Parent final : ParentBase {
  Array<T, P> a;
  explicit Parent(Array<T, P> x) : ParentBase(dtype_of<T>(), P), a(std::move(x)) {}
  void release() override { a = Array<T, P>(); }
  bool has_halo() const override {
    for (int d = 0; d < P; ++d)
      if (a.halo()[d] > 0) return true;
    return false;
  }
};

/// Weak references to every object of a kind that holds library storage or a communicator
/// (parents, communicators, sparse matrices), so that all of them can be released before Kokkos
/// and MPI end (interpreter exit), whoever still holds one in Python. The dead are forgotten now
/// and then. One per kind, a function-local static of the file that makes them.
template <class T>
class Registry {
 public:
  void add(const std::shared_ptr<T>& p) {
    if (all_.size() > 64 && all_.size() % 64 == 0)
      all_.erase(std::remove_if(all_.begin(), all_.end(), [](const auto& w) { return w.expired(); }), all_.end());
    all_.push_back(p);
  }
  /// release(object) on every live one, then forget them all.
  template <class F>
  void release_all(F&& release) {
    for (auto& w : all_)
      if (auto p = w.lock()) release(*p);
    all_.clear();
  }

 private:
  std::vector<std::weak_ptr<T>> all_;
};

/// Every parent made, so that their storage can be released before Kokkos is finalized.
void register_parent(const std::shared_ptr<ParentBase>& p);

template <class T, int P>
std::shared_ptr<ParentBase> make_parent(Array<T, P> a) {
  auto p = std::make_shared<Parent<T, P>>(std::move(a));
  register_parent(p);
  return p;
}

/// A Python array: parent + selection. View axis j of the parent's axis a when map[a] == j;
/// map[a] == -1: axis a is fixed at start[a]. Parent index = start[a] + step[a] * j.
struct Holder {
  std::shared_ptr<ParentBase> parent;
  int ndim = 0;  // M
  std::array<index_t, 3> start{}, step{}, shape{};
  std::array<int, 3> map{};

  DType dtype() const { return parent->dtype; }
  int prank() const { return parent->rank; }
  template <class T, int P>
  const Array<T, P>& array() const {
    return static_cast<Parent<T, P>&>(*parent).a;
  }
  template <class T, int M, int P>
  ArrayView<T, M, P> view() const {
    impl::Selection<P, M> s;
    Index<M> shp;
    for (int a = 0; a < P; ++a) {
      s.start[a] = start[a];
      s.step[a] = step[a];
      s.map[a] = map[a];
    }
    for (int j = 0; j < M; ++j) shp[j] = shape[j];
    return ArrayView<T, M, P>(array<T, P>(), s, shp);
  }
  /// True when the selection is the whole parent.
  bool whole() const;
};

Holder whole_holder(std::shared_ptr<ParentBase> p, const std::vector<index_t>& shape);

/// f(T{}, std::integral_constant<int, P>{}) for the holder's parent type.
template <class F>
decltype(auto) dispatch_parent(DType d, int P, F&& f) {
  auto by_rank = [&](auto t) -> decltype(auto) {
    switch (P) {
      case 1:
        return f(t, std::integral_constant<int, 1>{});
      case 2:
        return f(t, std::integral_constant<int, 2>{});
      default:
        return f(t, std::integral_constant<int, 3>{});
    }
  };
  switch (d) {
    case DType::f64:
      return by_rank(double{});
    case DType::f32:
      return by_rank(float{});
    case DType::i64:
      return by_rank(std::int64_t{});
    case DType::i32:
      return by_rank(std::int32_t{});
    default:
      return by_rank(bool{});
  }
}

/// A new parent of `dtype` laid out exactly like `like` (same distribution: shape, grid, halo,
/// periodic axes), holding like's storage converted element by element, halo included. Local.
std::shared_ptr<ParentBase> convert_parent(const ParentBase& like, DType dtype);

/// Copies src's storage (owned block and halo) and its halo flag into dst when dst has src's
/// type, rank and distribution and nothing but `dst_holders` holders share it (a reusable
/// snapshot); else false and nothing is done. Local (no communication).
bool copy_parent_into(const ParentBase& src, const std::shared_ptr<ParentBase>& dst, long dst_holders);

/// Exchanges the parent's halo (Neighbour-collective) and marks it fresh.
void exchange_parent_halo(ParentBase& p);

}  // namespace spmd::py
