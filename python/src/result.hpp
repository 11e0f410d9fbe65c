#pragma once
// The result of a bound library function as a Python array (axis.cpp, gen.cpp, shape.cpp,
// scan_sort.cpp).

#include <utility>
#include <vector>

#include "core.hpp"

namespace spmd::py {

/// A new parent holding r, as a whole holder. Local.
template <class T, int N>
Holder holder_of(Array<T, N> r) {
  std::vector<index_t> shape;
  for (int d = 0; d < N; ++d) shape.push_back(r.shape()[d]);
  return whole_holder(make_parent(std::move(r)), shape);
}

}  // namespace spmd::py
