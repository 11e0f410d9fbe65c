#pragma once
// Helpers shared by the NumPy-breadth tests (axis reductions, scans, shape functions).
#include "spmd_test.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace spmd::testing {

/// An array on `d` holding the row-major host values `ref` (read on rank 0), its halo `fill`
/// (garbage that must never be read).
template <int N, class T = double>
Array<T, N> from_host(const Distribution<N>& d, const std::vector<T>& ref, T fill = T(-777)) {
  Array<T, N> a(d, label("a"));
  a.fill_with_halo(fill);
  scatter(a, world().rank() == 0 ? ref : std::vector<T>{});
  return a;
}

/// Equal sizes and |got - want| <= rel * max(1, |want|) everywhere (rel 0: equal).
inline bool all_close(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])))) return false;
  return true;
}

}  // namespace spmd::testing
