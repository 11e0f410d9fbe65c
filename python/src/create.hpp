#pragma once
// Parent-level operations of the binding (create.cpp).

#include <optional>
#include <string>
#include <vector>

#include "core.hpp"

namespace spmd::py {

enum class Fill { none, zero, value };

/// A new array of `shape` on `comm` (Collective: it builds a Distribution), its halo included
/// zeroed or filled (Fill::zero, Fill::value) or left uninitialised (Fill::none).
Holder create(DType dtype, const Comm& comm, const std::vector<index_t>& shape, const DistributionOptions& opts,
              Fill fill, double value);
/// 1-D start + i * step, i < n (NumPy's arange once n is known). Collective.
Holder arange(DType dtype, const Comm& comm, index_t n, double start, double step, const DistributionOptions& opts);
/// The whole parent array, row-major, into `out` (h must be a whole holder) on every rank.
/// Collective.
void gather_whole(const Holder& h, void* out);
/// The owned elements of h's parent from `global` (row-major, the parent's shape; every rank
/// passes the same data). Local.
void set_owned_from(const Holder& h, const void* global);
/// Release every parent's storage (interpreter exit). Local.
void release_parents();

struct ParentInfo {
  std::vector<index_t> shape, owned_lo, owned_hi;
  std::vector<int> halo, grid;
  std::vector<bool> periodic;
  std::string label;
  std::optional<Comm> comm;
};
ParentInfo parent_info(const ParentBase& p);

}  // namespace spmd::py
