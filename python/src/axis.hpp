#pragma once
// Per-axis reductions of the binding (axis.cpp): NumPy's axis= on spmd::sum ... spmd::argmax.

#include <vector>

#include "core.hpp"

namespace spmd::py {

enum class AxisOp : int { sum, prod, min, max, mean, var, std, any, all, argmin, argmax };

/// The reduction `op` of h (a whole parent) over `axes` (distinct, in [0, ndim)) in NumPy's
/// keepdims shape, laid out on h's process grid (axis_reduce.hpp's keepdims result); ddof for
/// var and std. Element types the Python layer passes (it converts the others first): sum and
/// prod float64, float32, int64; min, max, argmin, argmax any but bool; mean, var, std floating;
/// any, all bool. Results: the operand's type, bool for any/all, int64 for argmin/argmax.
/// Collective.
Holder axis_reduce(AxisOp op, const Holder& h, const std::vector<int>& axes, index_t ddof);

}  // namespace spmd::py
