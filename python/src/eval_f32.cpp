// Fused expressions of type float (see eval_impl.hpp).
#include "eval_impl.hpp"

namespace spmd::py {
SPMD_PY_INSTANTIATE_PROGRAM(float)
}  // namespace spmd::py
