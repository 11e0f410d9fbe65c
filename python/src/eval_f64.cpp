// Fused expressions of type double (see eval_impl.hpp).
#include "eval_impl.hpp"

namespace spmd::py {
SPMD_PY_INSTANTIATE_PROGRAM(double)
}  // namespace spmd::py
