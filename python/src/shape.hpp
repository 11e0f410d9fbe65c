#pragma once
// Shape functions, scans and sorting of the binding (shape.cpp, scan_sort.cpp). The Python layer
// passes whole parents (it copies a view or evaluates an expression first) and checks the
// arguments as NumPy does; the library checks them again (spmd::Error on every rank).

#include <vector>

#include "core.hpp"

namespace spmd::py {

/// spmd::reshape(h, shape): a new array of `shape` (1-3 axes, no -1) holding h's elements in C
/// order, on an automatic distribution. Collective.
Holder reshape(const Holder& h, const std::vector<index_t>& shape);
/// spmd::transpose(h, axes(order...)): result axis k is h's axis order[k]. Collective.
Holder transpose(const Holder& h, const std::vector<int>& order);

enum class ScanOp : int { cumsum, cumprod };
/// spmd::cumsum / spmd::cumprod of h along `axis` (h float64, float32 or int64: the Python layer
/// widens int32 and bool to int64 as NumPy does). Collective.
Holder scan(ScanOp op, const Holder& h, int axis);

enum class SortOp : int { sort, argsort, unique };
/// spmd::sort / argsort / unique of a 1-D h (any type but bool). Collective.
Holder sort(SortOp op, const Holder& h);

}  // namespace spmd::py
