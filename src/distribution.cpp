#include <limits>

#include "spmd/distribution.hpp"

namespace spmd::impl {

namespace {
struct GridSearch {
  const std::vector<index_t>& shape;
  const std::vector<int>& fixed;
  const std::vector<int>& halo;
  const std::vector<bool>& periodic;
  std::vector<int> cur, best;
  double best_cost = std::numeric_limits<double>::infinity();

  // Cost: halo surface of the largest block (faces to actual neighbours), plus a large penalty
  // per axis cut into more blocks than it has indices (empty blocks).
  double cost(const std::vector<int>& dims) const {
    const int n = static_cast<int>(dims.size());
    double c = 0, empty = 0, too_narrow = 0;
    for (int d = 0; d < n; ++d) {
      if (dims[d] > shape[d]) empty += static_cast<double>(dims[d] - shape[d]);
      const bool neighbours = dims[d] > 1 || (!periodic.empty() && periodic[d]);
      if (!halo.empty() && halo[d] > 0 && neighbours && shape[d] > 0 && shape[d] / dims[d] < halo[d]) ++too_narrow;
      if (dims[d] == 1) continue;
      double face = 1;
      for (int e = 0; e < n; ++e)
        if (e != d) face *= static_cast<double>((shape[e] + dims[e] - 1) / dims[e]);
      c += face * (dims[d] == 2 ? 1 : 2);
    }
    return c + empty * 1e30 + too_narrow * 1e60;
  }
  void search(int axis, int left) {
    const int n = static_cast<int>(shape.size());
    if (axis == n - 1) {
      if (fixed[axis] != 0 && fixed[axis] != left) return;
      cur[axis] = left;
      const double c = cost(cur);
      // Ties go to the grid that cuts earlier axes more (as MPI_Dims_create orders them).
      if (c < best_cost || (c == best_cost && cur > best)) {
        best_cost = c;
        best = cur;
      }
      return;
    }
    for (int f = 1; f <= left; ++f) {
      if (left % f != 0) continue;
      if (fixed[axis] != 0 && fixed[axis] != f) continue;
      cur[axis] = f;
      search(axis + 1, left / f);
    }
  }
};
}  // namespace

std::vector<int> choose_grid(const std::vector<index_t>& shape, int nranks, const std::vector<int>& fixed,
                             const std::vector<int>& halo, const std::vector<bool>& periodic) {
  GridSearch s{shape, fixed, halo, periodic, std::vector<int>(shape.size(), 1), {}};
  s.search(0, nranks);
  if (s.best.empty())
    throw Error::replicated(
        str("spmd::Distribution: no process grid of ", nranks, " ranks matches ", shape_str(fixed)));
  return s.best;
}

}  // namespace spmd::impl
