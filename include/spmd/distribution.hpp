#pragma once
/// \file distribution.hpp
/// spmd::Distribution<N>: how a global N-d index space is split over the ranks of a Comm.
///
/// The ranks form a Cartesian process grid `dims` (row-major: the last axis varies fastest, as
/// in MPI_Cart_create). Along each axis the n indices are cut into dims[d] balanced blocks: the
/// first (n mod p) blocks get one index more. A block may be empty (n < p); every operation works
/// on such ranks. Each rank's block is stored with a halo of `halo[d]` indices on both sides.
///
///   7 x 5 on 3 ranks (automatic grid 3 x 1):      rank 0 owns rows 0..2 (3 rows)
///                                                 rank 1 owns rows 3..4 (2 rows)
///                                                 rank 2 owns rows 5..6 (2 rows)
///
/// Construction is collective and validated with the same verdict on every rank (the ranks'
/// arguments are gathered first). Queries are local: the description is replicated.

#include <array>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/box.hpp"
#include "spmd/comm.hpp"

namespace spmd {

/// Halo width option: `halo(1)` for every axis, `halo({1, 2})` per axis.
struct HaloWidth {
  std::vector<int> widths;  ///< one width for every axis, or one per axis
};
/// Halo width `w` on every axis (an option of Distribution and the creation functions).
inline HaloWidth halo(int w) {
  return HaloWidth{{w}};
}
/// Halo widths per axis.
inline HaloWidth halo(std::initializer_list<int> w) {
  return HaloWidth{std::vector<int>(w)};
}

/// Periodic-axes option: `periodic()` for every axis, `periodic({true, false})` per axis.
struct Periodic {
  std::vector<bool> axes;  ///< one flag for every axis, or one per axis
};
/// Every axis periodic.
inline Periodic periodic() {
  return Periodic{{true}};
}
/// Periodic axes, one flag per axis.
inline Periodic periodic(std::initializer_list<bool> p) {
  return Periodic{std::vector<bool>(p)};
}

/// Storage label option: `label("u")` names the array's Kokkos::View (shown by Kokkos tools).
struct Label {
  std::string name;  ///< the View's label (an array) or the kernel's name (for_each, transform, assign)
};
/// The label option: names an array's storage, or a kernel (docs/profiling.md).
inline Label label(std::string name) {
  return Label{std::move(name)};
}

/// Process-grid option: `grid({2, 3})`; 0 entries are chosen automatically.
struct ProcessGrid {
  std::vector<int> dims;  ///< process-grid extents per axis; 0: chosen automatically
};
/// A process grid, e.g. `grid({2, 0})`: 2 along axis 0, the rest chosen.
inline ProcessGrid grid(std::initializer_list<int> d) {
  return ProcessGrid{std::vector<int>(d)};
}

/// A Distribution's options as values (what halo(), periodic(), grid() and Label give the
/// variadic constructors): empty vectors mean the defaults (no halo, no periodic axis, an
/// automatic process grid).
struct DistributionOptions {
  std::vector<int> halo;       ///< halo width: none, one for every axis, or one per axis
  std::vector<bool> periodic;  ///< periodic: none, one for every axis, or one per axis
  std::vector<int> dims;       ///< the process grid: none, or one per axis (0: chosen)
  std::string label;           ///< the label
  /// Take one option. Local.
  void apply(const Label& l) { label = l.name; }
  /// Local.
  void apply(const HaloWidth& h) { halo = h.widths; }
  /// Local.
  void apply(const Periodic& p) { periodic = p.axes; }
  /// Local.
  void apply(const ProcessGrid& g) { dims = g.dims; }
};

namespace impl {
/// The public spmd::DistributionOptions (the name impl/distribution_impl.hpp still uses).
using DistributionOptions = spmd::DistributionOptions;
/// True for the option types above (halo, periodic, grid, label).
template <class T>
struct is_option : std::false_type {};
template <>
struct is_option<HaloWidth> : std::true_type {};
template <>
struct is_option<Periodic> : std::true_type {};
template <>
struct is_option<ProcessGrid> : std::true_type {};
template <>
struct is_option<Label> : std::true_type {};
template <class... O>
inline constexpr bool are_options_v = (is_option<std::decay_t<O>>::value && ...);
template <class... O>
using if_options = std::enable_if_t<are_options_v<O...>, int>;

template <class... Opts>
DistributionOptions gather_options(const Opts&... opts) {
  DistributionOptions o;
  (o.apply(opts), ...);
  return o;
}

/// Choose a process grid for `shape` over `nranks`: among all factorizations (with the given
/// nonzero entries kept), the one with the least halo surface per rank, avoiding empty blocks.
/// Local (deterministic, so every rank picks the same).
/// Grids whose blocks would be narrower than the halo along an axis with neighbours are avoided.
std::vector<int> choose_grid(const std::vector<index_t>& shape, int nranks, const std::vector<int>& fixed,
                             const std::vector<int>& halo = {}, const std::vector<bool>& periodic = {});

/// Balanced block of coordinate c of p along an axis of n: [start, start + extent).
inline index_t block_start(index_t n, int p, int c) {
  const index_t q = n / p, r = n % p;
  return c * q + std::min<index_t>(c, r);
}
inline index_t block_extent(index_t n, int p, int c) {
  return n / p + (static_cast<index_t>(c) < n % p ? 1 : 0);
}
/// Coordinate of the block holding index i.
inline int block_of(index_t n, int p, index_t i) {
  const index_t q = n / p, r = n % p;
  if (i < r * (q + 1)) return static_cast<int>(i / (q + 1));
  return static_cast<int>(r + (i - r * (q + 1)) / q);
}
}  // namespace impl

/// A global N-d index space split over the ranks of a Comm (see the file comment). A value:
/// copies share one replicated description.
template <int N>
class Distribution {
  static_assert(N >= 1 && N <= 6, "spmd::Distribution: N must be between 1 and 6");

 public:
  /// The type of global indices and shapes.
  using index_type = Index<N>;

  Distribution() = default;

  /// Distribute `shape` over `comm`. Options: halo(...), periodic(...), grid(...).
  /// Collective; throws the same spmd::Error on every rank for a shape, grid, halo or periodic
  /// setting that differs across ranks, a grid whose product is not the rank count, a negative
  /// extent or halo, or a halo wider than a neighbour's block.
  template <class... Opts, impl::if_options<Opts...> = 0>
  Distribution(const Comm& comm, const index_type& shape, const Opts&... opts)
      : Distribution(comm, shape, impl::gather_options(opts...)) {}

  /// The same from options already gathered. Collective.
  Distribution(const Comm& comm, const index_type& shape, const DistributionOptions& opts);

  /// Local queries.
  const Comm& comm() const { return d_->comm; }
  /// The global shape.
  const index_type& shape() const { return d_->shape; }
  /// The global extent along axis d.
  index_t extent(int d) const { return d_->shape[d]; }
  /// Number of global indices.
  index_t size() const { return Box<N>{index_type{}, d_->shape}.size(); }
  /// The process grid's extents.
  const std::array<int, N>& dims() const { return d_->dims; }
  /// The halo widths.
  const std::array<int, N>& halo() const { return d_->halo; }
  /// Which axes are periodic.
  const std::array<bool, N>& periodic() const { return d_->periodic; }
  /// This rank's grid coordinates.
  const std::array<int, N>& coords() const { return d_->coords; }
  /// The box of global indices this rank owns.
  const Box<N>& owned() const { return d_->owned; }

  /// Grid coordinates of `rank`. Local.
  std::array<int, N> coords_of(int rank) const;
  /// Rank at grid coordinates `c` (which must be inside the grid). Local.
  int rank_of(const std::array<int, N>& c) const;
  /// The box `rank` owns. Local.
  Box<N> owned_by(int rank) const;
  /// The rank owning global index i; throws spmd::Error when i is outside the shape. Local.
  int owner(const index_type& i) const;
  /// The rank at grid offset `off` (each entry -1, 0 or 1, or more) from this rank, wrapping
  /// around periodic axes; -1 when there is none. Local.
  int neighbor(const std::array<int, N>& off) const;
  /// Extents of this rank's storage: owned extents plus a halo on both sides. Local.
  std::array<int, N> local_extents_with_halo() const;

  /// Same communicator, shape and process grid: the owned boxes agree (halos may differ). Local.
  bool same_layout(const Distribution& o) const {
    return d_ == o.d_ || (d_ && o.d_ && d_->comm == o.d_->comm && d_->shape == o.d_->shape && d_->dims == o.d_->dims);
  }
  /// Same layout, halo and periodicity. Local.
  bool operator==(const Distribution& o) const {
    return d_ == o.d_ || (same_layout(o) && d_->halo == o.d_->halo && d_->periodic == o.d_->periodic);
  }
  /// Not the same layout, halo and periodicity. Local.
  bool operator!=(const Distribution& o) const { return !(*this == o); }
  /// The same distribution with other halo widths (validated like the constructor). Collective.
  Distribution with_halo(const std::array<int, N>& halo) const;
  /// A one-line description: shape, grid, halo, periodic axes. Local.
  std::string describe() const;
  /// True for a default-constructed (null) distribution. Local.
  bool is_null() const { return !d_; }

 private:
  struct Data {
    Comm comm;
    index_type shape{};
    std::array<int, N> dims{};
    std::array<int, N> halo{};
    std::array<bool, N> periodic{};
    std::array<int, N> coords{};
    Box<N> owned{};
  };
  std::shared_ptr<const Data> d_;
};

}  // namespace spmd

#include "spmd/impl/distribution_impl.hpp"
